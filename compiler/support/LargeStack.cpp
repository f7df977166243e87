// LargeStack.cpp — pthread with an explicit stack size.
#include "support/LargeStack.h"

#include <pthread.h>

namespace fsl {
namespace {

struct Job {
  const std::function<int()> *body;
  int result = 0;
};

void *runJob(void *argument) {
  auto *job = static_cast<Job *>(argument);
  job->result = (*job->body)();
  return nullptr;
}

} // namespace

int runWithLargeStack(const std::function<int()> &body, size_t stackBytes) {
  Job job{&body};
  pthread_attr_t attributes;
  pthread_t thread;
  if (pthread_attr_init(&attributes) != 0)
    return body();
  bool started = pthread_attr_setstacksize(&attributes, stackBytes) == 0 &&
                 pthread_create(&thread, &attributes, runJob, &job) == 0;
  pthread_attr_destroy(&attributes);
  if (!started)
    return body();
  pthread_join(thread, nullptr);
  return job.result;
}

} // namespace fsl

// Protocol.cpp — decoding the requests of Protocol.h.
#include "lsp/Protocol.h"

namespace fsl::lsp {

bool fromJSON(const llvm::json::Value &value, DocumentFormattingParams &result,
              llvm::json::Path path) {
  llvm::json::ObjectMapper o(value, path);
  return o && o.map("textDocument", result.textDocument);
}

bool fromJSON(const llvm::json::Value &value, FoldingRangeParams &result, llvm::json::Path path) {
  llvm::json::ObjectMapper o(value, path);
  return o && o.map("textDocument", result.textDocument);
}

bool fromJSON(const llvm::json::Value &value, ExecuteCommandParams &result, llvm::json::Path path) {
  llvm::json::ObjectMapper o(value, path);
  if (!o || !o.map("command", result.command))
    return false;
  const llvm::json::Object *object = value.getAsObject();
  const llvm::json::Array *arguments = object->getArray("arguments");
  if (!arguments || arguments->size() != 1) {
    path.field("arguments").report("expected one argument: {uri, position}");
    return false;
  }
  llvm::json::ObjectMapper argument((*arguments)[0], path.field("arguments").index(0));
  return argument && argument.map("uri", result.uri) && argument.map("position", result.position);
}

llvm::json::Value ownedJSON(const llvm::json::Value &value) {
  switch (value.kind()) {
  case llvm::json::Value::String:
    return value.getAsString()->str();
  case llvm::json::Value::Array: {
    llvm::json::Array array;
    for (const llvm::json::Value &element : *value.getAsArray())
      array.push_back(ownedJSON(element));
    return array;
  }
  case llvm::json::Value::Object: {
    llvm::json::Object object;
    for (const auto &[key, element] : *value.getAsObject())
      object[key.str()] = ownedJSON(element);
    return object;
  }
  default:
    return value;
  }
}

} // namespace fsl::lsp

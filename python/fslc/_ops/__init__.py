"""The compiled op path: fslc/_ops/ext.cpp (the C++ kernels of the torch ops), its build on
first use (build.py) and the plans it is given (plan.py). Nothing here imports torch."""

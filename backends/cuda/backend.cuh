// The CUDA backend: included by libmerge.hpp when compiled by nvcc.
#pragma once

#include "../../policies/cuda.hpp"
#include "runtime.cuh"
#include "merge.cuh"
#include "merge_sort.cuh"
#include "multiway.cuh"
#include "adaptive_sort.cuh"
#include "shard_sort.cuh"
#include "precondition.cuh"
#include "sorted_search.cuh"

// libmerge: merge-based algorithms (merge sort, merge, k-way merge, sorted search) behind
// execution policies. Include this one header.
//
//   g++ (no CUDA):  the serial backend, lm::serial.
//   -fopenmp:       also the OpenMP backend, lm::omp::par (and thrust::omp::par).
//   nvcc:           also the CUDA backend, lm::cuda::par (and Thrust's CUDA
//                   policies, e.g. thrust::device).
#pragma once

#include "detail/config.hpp"
#include "functional.hpp"
#include "merge.hpp"
#include "merge_sort.hpp"
#include "multiway_merge.hpp"
#include "sort.hpp"
#include "search_tags.hpp"
#include "sorted_search.hpp"

#include "../policies/serial.hpp"
#include "../backends/serial/merge.hpp"
#include "../backends/serial/merge_sort.hpp"
#include "../backends/serial/precondition.hpp"
#include "../backends/serial/sorted_search.hpp"

#include "../policies/omp.hpp"
#include "../backends/omp/backend.hpp"

#if LIBMERGE_HAS_CUDA
#include "../backends/cuda/backend.cuh"
#endif

#include "../policies/thrust.hpp"

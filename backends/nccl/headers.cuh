// Step 1 of the NCCL sort (merge_sort.cuh): checks and buffers, the headers'
// all-gather (host wait 1) and every rank's checks of every header.
#pragma once

#include "state.cuh"

namespace libmerge::detail::nccl_backend {

// The host's copies of what the ranks exchange (host_staging).
struct host_view {
  header* send;
  header* all;  // local x world
  long long* splits;  // local x world x record_words(): cut_matrix
  long long* early;   // local x world x record_words(1, world, 1): the early round's cuts
  unsigned long long* done;  // local x 2: the words behind the merges (close_merges)
};

// The rank's small device buffers in one allocation (headers_only: headers alone).
template <class K, class V>
void take_small(rank_state<K, V>& s, int world, bool headers_only, const char* algorithm) {
  s.search.world = world;
  s.early_search.world = world;
  const std::size_t headers = align16(sizeof(header)) + align16(static_cast<std::size_t>(world) * sizeof(header));
  const std::size_t searches = s.search.bytes() + s.early_search.bytes();
  s.small.reset();
  s.small.emplace(cuda::pool_allocator{}, s.stream, headers_only ? headers : headers + searches + 32, algorithm);
  char* p = s.small->template as<char>();
  s.header_send = reinterpret_cast<header*>(p);
  s.header_all = reinterpret_cast<header*>(p + align16(sizeof(header)));
  if (headers_only) return;
  s.search.carve(p + headers);
  s.early_search.carve(p + headers + s.search.bytes());
  s.done_send = reinterpret_cast<unsigned long long*>(p + headers + searches);
  s.done_all = s.done_send + 2;
  // The first run's length: 0 until the local sort writes it (a failed rank reads it).
  check_cuda(cudaMemsetAsync(s.search.width, 0, sizeof(long long), s.stream), algorithm, "cudaMemsetAsync");
  check_cuda(cudaMemsetAsync(s.early_search.width, 0, sizeof(long long), s.stream), algorithm, "cudaMemsetAsync");
  check_cuda(cudaMemsetAsync(s.done_send, 0, 32, s.stream), algorithm, "cudaMemsetAsync");
}

// A rank's checks and buffers before the headers. A failure is flagged in its
// header so every rank throws alike (check_headers); only a rank that cannot
// get even the headers' buffers throws here (its peers wait for the deadline).
template <bool WithValues, class K, class V, class Comp>
void prepare_rank(rank_state<K, V>& s, const shard_view<K, V>* shard, header& h, int world, const char* algorithm) {
  h = header{};
  h.n = shard != nullptr ? static_cast<long long>(shard->n) : 0;
  h.key_bytes = static_cast<long long>(sizeof(K));
  h.key_code = type_code(typeid(K).name());
  h.value_bytes = WithValues ? static_cast<long long>(sizeof(V)) : 0;
  h.value_code = WithValues ? type_code(typeid(V).name()) : 0;
  h.comp_code = type_code(typeid(Comp).name());
  check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
  try {
    if (shard == nullptr) {
      throw std::invalid_argument(std::string("libmerge::") + algorithm + ": one shard per local rank is needed");
    }
    s.shard = *shard;
    int stream_device = 0;
    check_cuda(cudaStreamGetDevice(s.stream, &stream_device), algorithm, "cudaStreamGetDevice");
    if (stream_device != s.device) {
      // Still report, on a stream of the right device (else its default stream).
      if (cudaStreamCreateWithFlags(&s.side, cudaStreamNonBlocking) != cudaSuccess) {
        cudaGetLastError();
        s.side = nullptr;
      }
      s.stream = s.side;
      throw std::invalid_argument(std::string("libmerge::") + algorithm + ": the stream is of device " +
                                  std::to_string(stream_device) + ", the communicator's device is " +
                                  std::to_string(s.device));
    }
    if (s.shard.n < 0) throw std::invalid_argument(std::string("libmerge::") + algorithm + ": a negative length");
    const gpu::device_info& dev = gpu::current_device(algorithm);
    if (s.shard.n > 0) {
      s.shard.keys = gpu::device_pointer(s.shard.keys, dev, algorithm, WithValues ? "keys_first" : "first");
      if constexpr (WithValues) s.shard.vals = gpu::device_pointer(s.shard.vals, dev, algorithm, "values_first");
    }
    const cuda_backend::runs_outline o = cuda_backend::outline_runs<local_policy, K, V, WithValues, Comp>(
        dev, s.shard.n, most_runs(world) == 2, algorithm);
    h.four_way = o.four_way_merge;
    h.half = o.two_run_width;
    fail_point(s.fault, fault_at::small, algorithm);
    take_small(s, world, false, algorithm);
  } catch (const std::exception& e) {
    s.error = std::current_exception();
    h.failed = 1;
    std::strncpy(h.reason, e.what(), sizeof(h.reason) - 1);
  } catch (...) {
    s.error = std::current_exception();
    h.failed = 1;
  }
  if (h.failed) take_small(s, world, true, algorithm);
}

// Every rank's header to every rank (host wait 1), on the streams prepare_rank left.
template <class K, class V, class Transport>
void exchange_headers(Transport& t, std::vector<rank_state<K, V>>& st, const host_view& h, const char* algorithm) {
  const int world = t.world();
  std::vector<const void*> send;
  std::vector<void*> recv;
  std::vector<cudaStream_t> streams;
  for (std::size_t i = 0; i < st.size(); ++i) {
    rank_state<K, V>& s = st[i];
    check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(s.header_send, &h.send[i], sizeof(header), cudaMemcpyHostToDevice, s.stream),
               algorithm, "cudaMemcpyAsync (header)");
    send.push_back(s.header_send);
    recv.push_back(s.header_all);
    streams.push_back(s.stream);
  }
  t.on_streams(streams, [&] {
    t.allgather(send, recv, sizeof(header));
    for (std::size_t i = 0; i < st.size(); ++i) {
      rank_state<K, V>& s = st[i];
      check_cuda(cudaSetDevice(s.device), algorithm, "cudaSetDevice");
      check_cuda(cudaMemcpyAsync(h.all + i * static_cast<std::size_t>(world), s.header_all,
                                 static_cast<std::size_t>(world) * sizeof(header), cudaMemcpyDeviceToHost, s.stream),
                 algorithm, "cudaMemcpyAsync (headers)");
    }
    t.wait_all();
  });
}

// A failed local rank throws its own exception, its rank named.
template <class K, class V>
void rethrow_local_failure(const std::vector<rank_state<K, V>>& st, int world, const char* algorithm) {
  for (const rank_state<K, V>& s : st) {
    if (s.error) rethrow_naming(s.error, s.rank, world, algorithm);
  }
}

// The checks every rank makes alike on the headers: a failed rank (its own
// exception on that rank), types that differ from rank 0's.
template <class K, class V>
void check_headers(const std::vector<rank_state<K, V>>& st, const header* all, int world, const char* algorithm) {
  rethrow_local_failure(st, world, algorithm);
  for (int q = 0; q < world; ++q) {
    const std::string who = std::string("libmerge::") + algorithm + ": rank " + std::to_string(q);
    if (all[q].failed) {
      std::string reason(all[q].reason, strnlen(all[q].reason, sizeof(all[q].reason)));
      throw std::runtime_error(who + " failed before the exchange, nothing was sorted: " +
                               (reason.empty() ? std::string("(no message)") : reason));
    }
    if (all[q].key_bytes != all[0].key_bytes || all[q].key_code != all[0].key_code) {
      throw std::invalid_argument(who + " passed keys of another type than rank 0's");
    }
    if (all[q].value_bytes != all[0].value_bytes || all[q].value_code != all[0].value_code) {
      throw std::invalid_argument(who + " passed values of another type than rank 0's (or keys only)");
    }
    if (all[q].comp_code != all[0].comp_code) {
      throw std::invalid_argument(who + " passed a comparator of another type than rank 0's");
    }
  }
}

}  // namespace libmerge::detail::nccl_backend

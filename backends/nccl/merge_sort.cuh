// Merge sort of data spread over the ranks of an NCCL communicator (one GPU a
// rank), exactly balanced and stable. sort_shards runs the steps in order
// (details: docs/multi-gpu-sort.md):
//   1. headers     all-gather, host wait 1, all throw alike (headers.cuh)
//   2. local sort  into the rank's runs (local_sort.cuh); 2b. early_round
//   3. splitters   exact co-rank search and cuts (splitters.cuh); host wait 2
//   4. exchange    a round a chunk (exchange.cuh)
//   5. merge       each chunk as it arrives (merge_pieces.cuh); host wait 3
// Global order is (key, rank, position): rank r ends with positions
// [G_r, G_r + n_r); q sends [S_q(s), S_q(s+1)) of its sorted shard to s.
// Failures on one rank must reach the others, or they wait: each step flags
// them for the next collective check; the transport's deadline covers a rank
// that never comes. Past the headers each rank gets its own elements back,
// sorted (restore_shard), unless the device failed.
#pragma once

#include <type_traits>
#include <utility>

#include "exchange.cuh"
#include "headers.cuh"
#include "local_sort.cuh"
#include "merge_pieces.cuh"
#include "plan.cuh"
#include "state.cuh"

namespace libmerge::detail::nccl_backend {

// The phase marks of a call (null: none), recorded on each local rank's
// stream or on those `on` gives.
template <class Transport>
struct phase_marker {
  Transport& t;
  phase_marks* marks;
  device_scope& scope;
  const char* algorithm;
  void operator()(int phase, const std::vector<cudaStream_t>* on = nullptr) const {
    if (marks == nullptr) return;
    for (int i = 0; i < t.local_count(); ++i) {
      scope.set(t.local(i).device, algorithm);
      const std::size_t u = static_cast<std::size_t>(i);
      check_cuda(cudaEventRecord(marks->events[u][static_cast<std::size_t>(phase)],
                                 on != nullptr ? (*on)[u] : t.local(i).stream),
                 algorithm, "cudaEventRecord (phase mark)");
    }
  }
};

// The fault a transport's hook sets for `rank` (fault_for, where the
// transport has one: the tests' loopback transport); none otherwise.
template <class Transport, class = void>
struct has_fault_hook : std::false_type {};
template <class Transport>
struct has_fault_hook<Transport, std::void_t<decltype(std::declval<const Transport&>().fault_for(0))>>
    : std::true_type {};
template <class Transport>
fault_at injected_fault_of([[maybe_unused]] const Transport& t, [[maybe_unused]] int rank) {
  if constexpr (has_fault_hook<Transport>::value) {
    return t.fault_for(rank);
  } else {
    return fault_at::none;
  }
}

// One rank in all: the single-GPU sort, nothing to exchange.
template <bool WithValues, class K, class V, class Transport, class Comp>
void sort_alone(Transport& t, const shard_view<K, V>& sh, Comp comp, device_scope& scope,
                const phase_marker<Transport>& mark, const char* algorithm) {
  scope.set(t.local(0).device, algorithm);
  const auto par = cuda::par.on(t.local(0).stream);
  if constexpr (WithValues) {
    libmerge::merge_sort_by_key(par, sh.keys, sh.keys + sh.n, sh.vals, comp);
  } else {
    libmerge::merge_sort(par, sh.keys, sh.keys + sh.n, comp);
  }
  for (int phase = 1; phase <= 4; ++phase) mark(phase);
  t.wait_all();
}

// What step 2 hands the search, a local rank each (the shard stands in for
// runs whose buffers failed; its status makes every rank throw).
template <class K>
struct local_runs {
  std::vector<long long> status, lengths;
  std::vector<const K*> keys;
  std::vector<const long long*> all_lengths;
};

// 2. The local sorts, into each rank's runs (with the early round the first
// runs, then the second ones, all queued before anything waits).
template <bool WithValues, class K, class V, class Comp>
local_runs<K> sort_locally(std::vector<rank_state<K, V>>& st, int world, const header* all, const call_plan& plan,
                           Comp comp, const char* algorithm) {
  local_runs<K> r;
  for (rank_state<K, V>& s : st) {
    s.search.runs = plan.runs;
    s.search.chunks = plan.chunks;
    s.search.taper = plan.taper;
    r.status.push_back(sort_rank<WithValues>(s, world, all, plan, comp, algorithm));
    r.lengths.push_back(static_cast<long long>(s.shard.n));
    r.keys.push_back(s.keys != nullptr ? s.keys : s.shard.keys);
    r.all_lengths.push_back(&s.header_all[0].n);
  }
  if (plan.early) {
    for (std::size_t i = 0; i < st.size(); ++i) r.status[i] = sort_second<WithValues>(st[i], comp, algorithm);
  }
  return r;
}

// 3. The splitters; every rank's cuts and status to host `words`, `stride` a
// rank (wait 2). Also the early round's search, in `which` buffers.
template <class K, class V, class Transport, class Comp>
void find_cuts(Transport& t, std::vector<rank_state<K, V>>& st, splitter_buffers<K> rank_state<K, V>::*which,
               const local_runs<K>& r, long long* words, std::size_t stride, long long longest, Comp comp,
               device_scope& scope, const char* algorithm) {
  const std::size_t W = static_cast<std::size_t>(t.world());
  std::vector<splitter_buffers<K>> bufs;
  for (rank_state<K, V>& s : st) bufs.push_back(s.*which);
  find_splitters(t, bufs, r.keys, r.lengths, r.status, r.all_lengths,
                 static_cast<int>(sizeof(header) / sizeof(long long)), longest, comp,
                 [&](int i) { scope.set(st[static_cast<std::size_t>(i)].device, algorithm); }, algorithm);
  for (std::size_t i = 0; i < st.size(); ++i) {
    scope.set(st[i].device, algorithm);
    check_cuda(cudaMemcpyAsync(words + i * W * stride, (st[i].*which).splits_all, W * stride * sizeof(long long),
                               cudaMemcpyDeviceToHost, t.local(static_cast<int>(i)).stream),
               algorithm, "cudaMemcpyAsync (cuts)");
  }
  t.wait_all();
}

// The early round's pieces, one group on the exchange streams, each into the
// receiver's mirror of the sender's first run.
template <bool WithValues, class K, class V, class Transport>
void send_early(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const early_cuts& e,
                const std::vector<cudaStream_t>& streams, device_scope& scope, const char* algorithm) {
  const int world = t.world();
  auto send = [&](bool values) {
    send_pieces(t, st, values, [&](std::size_t x, std::size_t size) {
      const rank_state<K, V>& s = st[x];
      wire_plan p;
      for (int q = 0; q < world; ++q) {
        wire_piece o, i;
        if (q != s.rank) {
          o = wire(e.sent(s.rank, q).first, e.sent(s.rank, q).second, size, all[s.rank].n);
          i = wire(e.sent(q, s.rank).first, e.sent(q, s.rank).second, size, all[q].n);
        }
        p.out.offset.push_back(o.lo);
        p.out.bytes.push_back(o.hi - o.lo);
        p.in.offset.push_back(mirror_offset(s.mirror, q, size, i));
        p.in.bytes.push_back(i.hi - i.lo);
      }
      return p;
    });
  };
  t.on_streams(streams, [&] {
    t.grouped([&] {
      send(false);
      if constexpr (WithValues) send(true);
    });
  });
  // The exact search's collectives come after the early round's on every rank.
  for (rank_state<K, V>& s : st) {
    scope.set(s.device, algorithm);
    check_cuda(cudaEventRecord(s.early_done, s.exchange_stream), algorithm, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(s.stream, s.early_done, 0), algorithm, "cudaStreamWaitEvent");
  }
}

// 2b. The early round (plan.early: 2 GPUs, two runs a rank): the first runs'
// pieces travel while the second runs sort. The exact search still decides
// what each rank merges, so the early cuts need only agree on every rank;
// where they are no use, nothing goes early (plan_wire sends the rest).
// 2 GPUs, 2^30 int32 keys: about half the exchange hides behind the second sorts (docs/multi-gpu-sort.md)
template <bool WithValues, class K, class V, class Transport, class Comp>
void early_round(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const local_runs<K>& r,
                 long long* words, early_cuts& e, Comp comp, device_scope& scope, const char* algorithm) {
  const int world = t.world();
  const std::size_t stride = splitter_buffers<K>::record_words(1, world, 1);
  local_runs<K> first{r.status, {}, r.keys, {}};  // the first runs alone
  std::vector<cudaStream_t> streams;
  long long longest = 0;
  for (int q = 0; q < world; ++q) longest = std::max(longest, all[q].half);
  for (rank_state<K, V>& s : st) {
    s.early_search.runs = 1;
    s.early_search.chunks = 1;
    first.lengths.push_back(all[s.rank].half);
    first.all_lengths.push_back(&s.header_all[0].half);
    streams.push_back(s.exchange_stream != nullptr ? s.exchange_stream : s.stream);
  }
  t.on_streams(streams, [&] {
    find_cuts(t, st, &rank_state<K, V>::early_search, first, words, stride, longest, comp, scope, algorithm);
  });
  // Usable where every rank is well and the cuts add up.
  const cut_matrix m{words, world, 1, 1};
  e.world = world;
  e.moved = cuts_add_up(m, &all[0].half, static_cast<int>(sizeof(header) / sizeof(long long)));
  for (int q = 0; q < world; ++q) e.moved = e.moved && m.status(q) == 0;
  if (!e.moved) return;
  for (int q = 0; q < world; ++q) {
    for (int b = 0; b <= world; ++b) e.cut.push_back(m.cut(q, 0, b));
  }
  send_early<WithValues>(t, st, all, e, streams, scope, algorithm);
}

// The end of step 5: two words a rank (1 and its rank where its merges failed
// to queue) all-reduced so every rank knows who failed; to host `done`.
template <class K, class V, class Transport>
void close_merges(Transport& t, std::vector<rank_state<K, V>>& st, unsigned long long* done, device_scope& scope,
                  const char* algorithm) {
  std::vector<const unsigned long long*> send;
  std::vector<unsigned long long*> recv;
  for (std::size_t i = 0; i < st.size(); ++i) {
    rank_state<K, V>& s = st[i];
    scope.set(s.device, algorithm);
    if (s.error) {  // (done is the host's copy of the words: read before they land there)
      done[2 * i] = 1;
      done[2 * i + 1] = static_cast<unsigned long long>(s.rank);
      check_cuda(cudaMemcpyAsync(s.done_send, done + 2 * i, 2 * sizeof(unsigned long long), cudaMemcpyHostToDevice,
                                 s.stream),
                 algorithm, "cudaMemcpyAsync (done words)");
    }
    send.push_back(s.done_send);
    recv.push_back(s.done_all);
  }
  t.allreduce_sum(send, recv, 2);
  for (std::size_t i = 0; i < st.size(); ++i) {
    scope.set(st[i].device, algorithm);
    check_cuda(cudaMemcpyAsync(done + 2 * i, st[i].done_all, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                               st[i].stream),
               algorithm, "cudaMemcpyAsync (done words)");
  }
}

// Every rank's check of close_merges' words: the failed rank rethrows its own
// exception, the others an error naming it.
template <class K, class V>
void check_merges(const std::vector<rank_state<K, V>>& st, const unsigned long long* done, int world,
                  const char* algorithm) {
  rethrow_local_failure(st, world, algorithm);
  if (done[0] == 0) return;
  const std::string who =
      done[0] == 1 ? "rank " + std::to_string(done[1]) : std::to_string(done[0]) + " ranks";
  throw std::runtime_error(std::string("libmerge::") + algorithm + ": " + who +
                           " failed queuing the merge of the received pieces (its exception says why); every "
                           "rank's shard holds its own elements again, sorted");
}

// 4. and 5.: chunk c merges while c + 1 travels. A merge that fails to queue
// for want of memory is kept in the rank's error and the rank goes on
// exchanging; close_merges keeps every rank from returning before all have
// queued theirs (else peers would keep elements the failed rank restores).
template <bool WithValues, class K, class V, class Transport, class Comp>
void exchange_and_merge(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const cut_matrix& m,
                        const call_plan& plan, const early_cuts& e, Comp comp, device_scope& scope,
                        const phase_marker<Transport>& mark, unsigned long long* done, const char* algorithm) {
  std::vector<piece_plan> pp;
  std::vector<cudaStream_t> exchange_streams;
  for (rank_state<K, V>& s : st) {
    scope.set(s.device, algorithm);
    pp.push_back(plan_pieces(s.rank, m, all, slot_margin<K, V, WithValues>(), s.mirror, s.slots));
    exchange_streams.push_back(s.exchange_stream);
    if (plan.early) {  // (the exchange stream waited for the first run only)
      check_cuda(cudaStreamWaitEvent(s.exchange_stream, s.events[0], 0), algorithm, "cudaStreamWaitEvent");
    }
  }
  for (int c = 0; c < plan.chunks; ++c) {
    exchange_pieces<WithValues>(t, st, all, m, pp, e, c);
    if (c + 1 == plan.chunks) mark(3, &exchange_streams);
    for (std::size_t i = 0; i < st.size(); ++i) {
      if (st[i].error) continue;
      scope.set(st[i].device, algorithm);
      try {
        merge_pieces<WithValues>(st[i], plan, pp[i], c, comp, algorithm);
      } catch (const cuda_error& e) {  // (any other failure aborts: collective)
        if (e.code() != cudaErrorMemoryAllocation) throw;
        st[i].error = std::current_exception();
      } catch (const std::bad_alloc&) {
        st[i].error = std::current_exception();
      }
    }
  }
  close_merges(t, st, done, scope, algorithm);
  mark(4);
  t.wait_all();
}

// The sort of every shard this process drives (one per local rank of t).
template <bool WithValues, class K, class V, class Transport, class Comp>
void sort_shards(Transport& t, const std::vector<shard_view<K, V>>& shards, Comp comp, const char* algorithm,
                 phase_marks* marks = nullptr, const exchange_options& options = {}) {
  static_assert(alignof(K) <= 16 && alignof(V) <= 16,
                "libmerge::merge_sort (NCCL backend): keys and values aligned to more than 16 bytes are not "
                "supported");
  const int local = t.local_count();
  const int world = t.world();
  device_scope scope;
  const phase_marker<Transport> mark{t, marks, scope, algorithm};
  mark(0);
  if (world == 1 && shards.size() == 1) return sort_alone<WithValues>(t, shards[0], comp, scope, mark, algorithm);

  // Sized for the most runs and chunks a call can take (plan_call comes later).
  const std::size_t words = splitter_buffers<K>::record_words(most_runs(world), world, max_chunks);
  const std::size_t early_words = splitter_buffers<K>::record_words(1, world, 1);
  const std::size_t L = static_cast<std::size_t>(local), W = static_cast<std::size_t>(world);
  const std::size_t cuts_at = L * sizeof(header) + L * W * sizeof(header);
  const std::size_t done_at = cuts_at + L * W * (words + early_words) * sizeof(long long);
  host_staging staging(done_at + L * 2 * sizeof(unsigned long long));
  const host_view h{reinterpret_cast<header*>(staging.data()),
                    reinterpret_cast<header*>(staging.data() + L * sizeof(header)),
                    reinterpret_cast<long long*>(staging.data() + cuts_at),
                    reinterpret_cast<long long*>(staging.data() + cuts_at + L * W * words * sizeof(long long)),
                    reinterpret_cast<unsigned long long*>(staging.data() + done_at)};
  std::vector<rank_state<K, V>> st(L);
  for (std::size_t i = 0; i < L; ++i) {
    rank_state<K, V>& s = st[i];
    s.device = t.local(static_cast<int>(i)).device;
    s.rank = t.local(static_cast<int>(i)).rank;
    s.stream = t.local(static_cast<int>(i)).stream;
    s.fault = injected_fault_of(t, s.rank);
    const shard_view<K, V>* shard = i < shards.size() && shards.size() == L ? &shards[i] : nullptr;
    prepare_rank<WithValues, K, V, Comp>(s, shard, h.send[i], world, algorithm);
  }

  // A failure with collectives outstanding aborts the communicators, so peers
  // fail instead of waiting; checks every rank makes alike throw outside.
  auto collective = [&](auto&& steps) {
    try {
      steps();
    } catch (...) {
      t.abort_all();
      throw;
    }
  };

  // 1. Headers, checked before anything is sorted.
  collective([&] { exchange_headers(t, st, h, algorithm); });
  const header* all = h.all;  // every local rank received the same
  check_headers(st, all, world, algorithm);
  long long longest = 0;
  for (int q = 0; q < world; ++q) longest = std::max(longest, all[q].n);
  const call_plan plan = plan_call(all, world, longest, options);

  // From here the shard is scratch: on failure each rank restores its own.
  try {
    const local_runs<K> runs = sort_locally<WithValues>(st, world, all, plan, comp, algorithm);
    early_cuts e;
    if (plan.early) collective([&] { early_round<WithValues>(t, st, all, runs, h.early, e, comp, scope, algorithm); });
    mark(1);
    const cut_matrix m{h.splits, world, plan.runs, plan.chunks};
    collective([&] {
      find_cuts(t, st, &rank_state<K, V>::search, runs, h.splits, m.stride(), longest, comp, scope, algorithm);
    });
    check_cuts(st, all, m, algorithm);
    mark(2);
    collective([&] { exchange_and_merge<WithValues>(t, st, all, m, plan, e, comp, scope, mark, h.done, algorithm); });
    check_merges(st, h.done, world, algorithm);
  } catch (...) {
    for (rank_state<K, V>& s : st) restore_shard<WithValues>(s, comp);
    throw;
  }
}

}  // namespace libmerge::detail::nccl_backend

namespace libmerge::detail {

// lm::merge_sort / merge_sort_by_key with lm::nccl::par(comm, stream).
template <>
struct backend_impl<algo::merge_sort, backend::nccl> {
  static constexpr bool available = true;

  template <class KeysIt, class ValsIn, class ValsOut, class Comp>
  static void run(const nccl::policy& policy, KeysIt keys, index_t n, ValsIn, ValsOut vals, Comp comp) {
    static_assert(std::is_same_v<ValsIn, ValsOut>,
                  "libmerge::merge_sort_indices is not available on lm::nccl::par: sort (key, index) pairs with "
                  "merge_sort_by_key instead");
    constexpr bool with_values = has_values<ValsOut>;
    const char* algorithm = with_values ? "merge_sort_by_key" : "merge_sort";
    auto k = thrust::try_unwrap_contiguous_iterator(keys);
    static_assert(std::is_pointer_v<decltype(k)>,
                  "libmerge::merge_sort (NCCL backend): keys must be contiguous device memory (a raw pointer, "
                  "thrust::device_ptr or a thrust::device_vector iterator)");
    using K = std::remove_pointer_t<decltype(k)>;
    if constexpr (with_values) {
      auto v = thrust::try_unwrap_contiguous_iterator(vals);
      static_assert(std::is_pointer_v<decltype(v)>,
                    "libmerge::merge_sort_by_key (NCCL backend): values must be contiguous device memory");
      using V = std::remove_pointer_t<decltype(v)>;
      nccl_backend::nccl_transport t({policy.comm()}, {policy.stream()}, policy.timeout_seconds(), algorithm);
      nccl_backend::sort_shards<true, K, V>(t, {nccl_backend::shard_view<K, V>{k, v, n}}, comp, algorithm);
    } else {
      nccl_backend::nccl_transport t({policy.comm()}, {policy.stream()}, policy.timeout_seconds(), algorithm);
      nccl_backend::sort_shards<false, K, char>(t, {nccl_backend::shard_view<K, char>{k, nullptr, n}}, comp,
                                                algorithm);
    }
  }
};

}  // namespace libmerge::detail

// Steps 3 and 4 of the NCCL sort (merge_sort.cuh): the cut matrix and its
// check, where each piece goes, and a round's sends and receives.
#pragma once

#include "plan.cuh"

namespace libmerge::detail::nccl_backend {

// The cut matrix as the host received it (the same on every rank): cut(q, j, b)
// of rank q's run j at boundary b (splitters.cuh), q's status and first-run length.
struct cut_matrix {
  const long long* words;
  int world, runs, chunks;
  int boundaries() const { return world * chunks; }  // B: cuts 0 .. B a run
  std::size_t stride() const { return splitter_buffers<char>::record_words(runs, world, chunks); }
  long long cut(int q, int j, int b) const {
    return words[static_cast<std::size_t>(q) * stride() +
                 static_cast<std::size_t>(j) * (static_cast<std::size_t>(boundaries()) + 1) + static_cast<std::size_t>(b)];
  }
  long long status(int q) const { return words[static_cast<std::size_t>(q) * stride() + stride() - 2]; }
  long long width(int q) const { return words[static_cast<std::size_t>(q) * stride() + stride() - 1]; }
  long long run_begin(int q, int j) const { return j == 0 ? 0 : width(q); }
  long long run_length(int q, int j, long long n) const { return runs == 1 ? n : (j == 0 ? width(q) : n - width(q)); }
  // Rank q's piece of run j for chunk c of rank s.
  long long from(int q, int j, int s, int c) const { return run_begin(q, j) + cut(q, j, s * chunks + c); }
  long long count(int q, int j, int s, int c) const {
    return cut(q, j, s * chunks + c + 1) - cut(q, j, s * chunks + c);
  }
};

// Whether a cut matrix adds up for `lengths` (one every `stride` words): cuts
// in order and range, and the ranks' output boundaries summing to G_s.
inline bool cuts_add_up(const cut_matrix& m, const long long* lengths, int stride) {
  const int world = m.world;
  for (int q = 0; q < world; ++q) {
    if (m.width(q) < 0 || m.width(q) > lengths[q * stride]) return false;
  }
  for (int b = 0; b <= m.boundaries(); ++b) {
    long long sum = 0;
    for (int q = 0; q < world; ++q) {
      for (int j = 0; j < m.runs; ++j) {
        const long long c = m.cut(q, j, b);
        sum += c;
        const bool ordered = b == 0 ? c == 0 : c >= m.cut(q, j, b - 1);
        if (!ordered || c < 0 || c > m.run_length(q, j, lengths[q * stride])) return false;
      }
    }
    if (b % m.chunks == 0 && sum != rank_start(lengths, stride, world, b / m.chunks)) return false;
  }
  return true;
}

// The checks every rank makes alike on the (same) cut matrix: a rank that
// failed after the headers, cuts that do not add up (no strict weak ordering).
template <class K, class V>
void check_cuts(const std::vector<rank_state<K, V>>& st, const header* all, const cut_matrix& m, const char* algorithm) {
  const int world = m.world;
  rethrow_local_failure(st, world, algorithm);
  for (int q = 0; q < world; ++q) {
    if (m.status(q) != 0) {
      throw std::runtime_error(std::string("libmerge::") + algorithm + ": rank " + std::to_string(q) +
                               " failed in its local sort or making the exchange's buffers and stream (its exception "
                               "says why); nothing was exchanged");
    }
  }
  if (!cuts_add_up(m, &all[0].n, static_cast<int>(sizeof(header) / sizeof(long long)))) {
    throw std::runtime_error(std::string("libmerge::") + algorithm +
                             ": the ranks' splitters do not add up: the comparator is not a strict weak "
                             "ordering, or the ranks passed different data types or comparators; nothing was "
                             "exchanged");
  }
}

// Where local rank r's pieces lie: received piece (c, q, j) at element
// at[index(c, q, j)] (from n on), its own in its runs. Offsets are congruent to
// the sender's modulo 16, so NCCL writes from 16-byte boundaries in keys and
// values alike. Chunk c's merge writes [out[c], out[c + 1]).
struct piece_plan {
  int world = 0, runs = 0;
  std::vector<long long> at, n;  // chunks x world x runs: every piece's offset and length
  std::vector<long long> out;    // chunks + 1
  std::size_t index(int c, int q, int j) const {
    return (static_cast<std::size_t>(c) * static_cast<std::size_t>(world) + static_cast<std::size_t>(q)) *
               static_cast<std::size_t>(runs) +
           static_cast<std::size_t>(j);
  }
};
// What the early round moved, where `moved`: [cut[q][s], cut[q][s + 1]) of q's first run to s.
struct early_cuts {
  bool moved = false;
  int world = 0;
  std::vector<long long> cut;  // world x (world + 1)
  std::pair<long long, long long> sent(int q, int s) const {
    if (!moved) return {0, 0};
    const std::size_t at = static_cast<std::size_t>(q) * static_cast<std::size_t>(world + 1) + static_cast<std::size_t>(s);
    return {cut[at], cut[at + 1]};
  }
};

// Piece [a, b) less what went early, e: the part below e (part 0) or above
// it (part 1). Without an early round the whole piece is part 0.
inline std::pair<long long, long long> not_sent(long long a, long long b, std::pair<long long, long long> e, int part) {
  if (e.second <= e.first) return part == 0 ? std::pair{a, b} : std::pair{0LL, 0LL};
  return part == 0 ? std::pair{a, std::min(b, e.first)} : std::pair{std::max(a, e.second), b};
}

// (mirror: layout_early's, empty without the early round: a peer's
// first-run piece is then at its offset in the mirror of that run.)
inline piece_plan plan_pieces(int r, const cut_matrix& m, const header* all, std::size_t margin,
                              const std::vector<long long>& mirror, long long slots) {
  piece_plan p;
  p.world = m.world;
  p.runs = m.runs;
  long long cursor = mirror.empty() ? all[r].n : slots, out = 0;
  for (int c = 0; c < m.chunks; ++c) {
    p.out.push_back(out);
    for (int q = 0; q < m.world; ++q) {
      for (int j = 0; j < m.runs; ++j) {
        const long long count = m.count(q, j, r, c);
        long long at = 0;
        if (q == r) {
          at = m.from(r, j, r, c);
        } else if (j == 0 && !mirror.empty()) {
          at = mirror[static_cast<std::size_t>(q)] + m.from(q, 0, r, c);
        } else if (count > 0) {
          const long long a = m.from(q, j, r, c);
          at = cursor + static_cast<long long>(margin);
          at += ((a - at) % 16 + 16) % 16;
          cursor = at + count + static_cast<long long>(margin);
        }
        p.at.push_back(at);
        p.n.push_back(count);
        out += count;
      }
    }
  }
  p.out.push_back(out);
  return p;
}

// What local rank r sends and receives of one array for run j in chunk c.
struct wire_plan {
  pieces out, in;
};
// Where received piece i of peer q's first run starts in the receiver's
// mirror of that run (bytes; layout_early): at its own offset in the run.
inline std::size_t mirror_offset(const std::vector<long long>& mirror, int q, std::size_t size, const wire_piece& i) {
  return i.hi > i.lo ? static_cast<std::size_t>(mirror[static_cast<std::size_t>(q)]) * size + i.lo : 0;
}
// With the early round, a first-run piece sends what did not go early
// (`part`, not_sent) into the receiver's mirror.
inline wire_plan plan_wire(int r, int j, int c, const cut_matrix& m, const piece_plan& pp, std::size_t size,
                           const header* all, const std::vector<long long>& mirror, const early_cuts& e, int part) {
  wire_plan p;
  const bool mirrored = j == 0 && !mirror.empty();
  for (int q = 0; q < m.world; ++q) {
    wire_piece o, i;
    if (q != r && (mirrored || part == 0)) {  // every rank's runs start on a wire_align boundary (rank_state::keys)
      auto out = std::pair{m.from(r, j, q, c), m.from(r, j, q, c) + m.count(r, j, q, c)};
      auto in = std::pair{m.from(q, j, r, c), m.from(q, j, r, c) + m.count(q, j, r, c)};
      if (mirrored) {
        out = not_sent(out.first, out.second, e.sent(r, q), part);
        in = not_sent(in.first, in.second, e.sent(q, r), part);
      }
      o = wire(out.first, out.second, size, all[r].n);
      i = wire(in.first, in.second, size, all[q].n);
    }
    const std::size_t at = static_cast<std::size_t>(pp.at[pp.index(c, q, j)]);
    p.out.offset.push_back(o.lo);
    p.out.bytes.push_back(o.hi - o.lo);
    p.in.offset.push_back(mirrored ? mirror_offset(mirror, q, size, i) : (i.hi > i.lo ? at * size - i.head : 0));
    p.in.bytes.push_back(i.hi - i.lo);
  }
  return p;
}

// One exchange call for every local rank's keys (or values): plan(i, size)'s pieces.
template <class K, class V, class Transport, class Plan>
void send_pieces(Transport& t, std::vector<rank_state<K, V>>& st, bool values, Plan&& plan) {
  std::vector<const char*> from;
  std::vector<char*> to;
  std::vector<pieces> out, in;
  for (std::size_t i = 0; i < st.size(); ++i) {
    char* base = values ? reinterpret_cast<char*>(st[i].vals) : reinterpret_cast<char*>(st[i].keys);
    const wire_plan w = plan(i, values ? sizeof(V) : sizeof(K));
    from.push_back(base);
    to.push_back(base);
    out.push_back(w.out);
    in.push_back(w.in);
  }
  t.exchange(from, out, to, in);
}

// One round of step 4: chunk c's pieces, keys and values, in one NCCL group.
template <bool WithValues, class K, class V, class Transport>
void exchange_pieces(Transport& t, std::vector<rank_state<K, V>>& st, const header* all, const cut_matrix& m,
                     const std::vector<piece_plan>& pp, const early_cuts& e, int c) {
  auto send = [&](int j, bool values, int part) {
    send_pieces(t, st, values, [&](std::size_t i, std::size_t size) {
      return plan_wire(st[i].rank, j, c, m, pp[i], size, all, st[i].mirror, e, part);
    });
  };
  std::vector<cudaStream_t> streams;
  for (const rank_state<K, V>& s : st) streams.push_back(s.exchange_stream);
  t.on_streams(streams, [&] {
    t.grouped([&] {
      for (int j = 0; j < m.runs; ++j) {
        const int parts = j == 0 && !st.front().mirror.empty() ? 2 : 1;  // (the early round: below and above it)
        for (int part = 0; part < parts; ++part) {
          send(j, false, part);
          if constexpr (WithValues) send(j, true, part);
        }
      }
    });
  });
}

}  // namespace libmerge::detail::nccl_backend

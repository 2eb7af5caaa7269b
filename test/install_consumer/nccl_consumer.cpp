// Links against libmerge::nccl: NCCL's header and library come with it.
#include <nccl.h>

#include <cstdio>

int main() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version <= 0) return 1;
  std::printf("consumer: NCCL %d through libmerge::nccl\n", version);
  return 0;
}

// ballast-refuse-once: a test helper (tests/e2e/lab_test.sh). Attaches
// refuse_once.bpf.c's sk_lookup program to network namespaces (one program,
// one count per client for all of them): the kernel's TCP listener lookup
// for one port fails the second time it is asked about a client, in
// whichever namespace, as if the listener had gone between xdp_decap's
// lookup and TCP's. Prints "ready" once attached; on SIGTERM or SIGINT
// prints "refused N" (lookups made to fail) and exits, which detaches it.
//
//   ballast-refuse-once --port PORT --netns NAME [--netns NAME]...
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "refuse_once.skel.h"

namespace {

int Usage() {
  fprintf(stderr, "usage: ballast-refuse-once --port PORT --netns NAME [--netns NAME]...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> netns;
  long port = -1;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return Usage();
    if (std::strcmp(argv[i], "--netns") == 0) {
      netns.emplace_back(argv[i + 1]);
      if (netns.back().empty() || netns.back().find('/') != std::string::npos) return Usage();
    } else if (std::strcmp(argv[i], "--port") == 0) {
      char* end = nullptr;
      port = std::strtol(argv[i + 1], &end, 10);
      if (*end != '\0') port = -1;
    } else {
      return Usage();
    }
  }
  if (netns.empty() || port < 1 || port > 65535) return Usage();
  // Block the signals before anything runs, so that sigwait gets them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, nullptr);

  refuse_once* skel = refuse_once__open();
  if (skel == nullptr) {
    fprintf(stderr, "ballast-refuse-once: opening the BPF object: %s\n", strerror(errno));
    return 1;
  }
  skel->rodata->port = static_cast<uint32_t>(port);
  if (int err = refuse_once__load(skel); err != 0) {
    fprintf(stderr, "ballast-refuse-once: loading: %s\n", strerror(-err));
    return 1;
  }
  std::vector<bpf_link*> links;
  for (const std::string& name : netns) {
    const std::string path = "/run/netns/" + name;
    const int ns = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0) {
      fprintf(stderr, "ballast-refuse-once: %s: %s\n", path.c_str(), strerror(errno));
      return 1;
    }
    bpf_link* link = bpf_program__attach_netns(skel->progs.refuse_once, ns);
    const int err = errno;
    close(ns);  // the link holds the namespace
    if (link == nullptr) {
      fprintf(stderr, "ballast-refuse-once: attaching to netns %s: %s\n", name.c_str(),
              strerror(err));
      return 1;
    }
    links.push_back(link);
  }
  printf("ready\n");
  fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  const uint32_t zero = 0;
  uint64_t refused = 0;
  bpf_map_lookup_elem(bpf_map__fd(skel->maps.refused), &zero, &refused);
  printf("refused %llu\n", static_cast<unsigned long long>(refused));
  for (bpf_link* link : links) bpf_link__destroy(link);
  refuse_once__destroy(skel);
  return 0;
}

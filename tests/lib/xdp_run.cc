#include "tests/lib/xdp_run.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ballast::pktgen {

absl::StatusOr<XdpResult> RunXdp(int prog_fd, const Bytes& frame, const XdpRunOptions& options) {
  if (frame.size() < 14)
    return absl::InvalidArgumentError(
        absl::StrCat("BPF_PROG_TEST_RUN refuses frames shorter than an Ethernet header (",
                     frame.size(), " < 14 bytes), with or without XDP metadata in front"));
  const Bytes& in = frame;
  Bytes out(in.size() + 4096);  // room for encapsulation

  xdp_md ctx_in{};
  ctx_in.data = 0;  // no metadata
  ctx_in.data_end = static_cast<uint32_t>(in.size());
  ctx_in.ingress_ifindex = options.ingress_ifindex;
  xdp_md ctx_out{};

  LIBBPF_OPTS(bpf_test_run_opts, opts);
  opts.data_in = in.data();
  opts.data_size_in = static_cast<uint32_t>(in.size());
  opts.data_out = out.data();
  opts.data_size_out = static_cast<uint32_t>(out.size());
  opts.ctx_in = &ctx_in;
  opts.ctx_size_in = sizeof ctx_in;
  opts.ctx_out = &ctx_out;
  opts.ctx_size_out = sizeof ctx_out;
  opts.repeat = options.repeat;
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) {
    const int err = errno;
    return absl::InternalError(absl::StrCat("BPF_PROG_TEST_RUN on a ", frame.size(),
                                            "-byte frame (ingress ifindex ",
                                            options.ingress_ifindex, "): ", strerror(err)));
  }
  XdpResult r;
  r.action = static_cast<int>(opts.retval);
  r.duration_ns = opts.duration;
  const size_t out_meta = ctx_out.data;  // metadata length after the run
  if (opts.data_size_out < out_meta)
    return absl::InternalError("BPF_PROG_TEST_RUN returned less data than its metadata");
  r.meta.assign(out.begin(), out.begin() + static_cast<long>(out_meta));
  r.out.assign(out.begin() + static_cast<long>(out_meta),
               out.begin() + static_cast<long>(opts.data_size_out));
  return r;
}

absl::StatusOr<TcResult> RunTc(int prog_fd, const Bytes& frame) {
  if (frame.size() < 14)
    return absl::InvalidArgumentError(
        "BPF_PROG_TEST_RUN refuses frames shorter than an Ethernet header");
  Bytes out(frame.size() + 256);
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  opts.data_in = frame.data();
  opts.data_size_in = static_cast<uint32_t>(frame.size());
  opts.data_out = out.data();
  opts.data_size_out = static_cast<uint32_t>(out.size());
  opts.repeat = 1;
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) {
    const int err = errno;
    return absl::InternalError(
        absl::StrCat("BPF_PROG_TEST_RUN (tc) on a ", frame.size(), "-byte frame: ", strerror(err)));
  }
  out.resize(opts.data_size_out);
  return TcResult{static_cast<int>(opts.retval), std::move(out), opts.duration};
}

const char* XdpActionName(int action) {
  switch (action) {
    case XDP_ABORTED:
      return "XDP_ABORTED";
    case XDP_DROP:
      return "XDP_DROP";
    case XDP_PASS:
      return "XDP_PASS";
    case XDP_TX:
      return "XDP_TX";
    case XDP_REDIRECT:
      return "XDP_REDIRECT";
  }
  return "XDP_?";
}

}  // namespace ballast::pktgen

// The prose of lbdp's man page; its commands and options come from the
// command table (tools/cli_doc). Pure.
#ifndef BALLAST_TOOLS_LBDP_MAN_INFO_H_
#define BALLAST_TOOLS_LBDP_MAN_INFO_H_

#include "tools/cli_doc/cli_doc.h"

namespace ballast::lbdp {

cli_doc::ManInfo LbdpManInfo();

}  // namespace ballast::lbdp

#endif  // BALLAST_TOOLS_LBDP_MAN_INFO_H_

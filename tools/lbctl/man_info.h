// The prose of lbctl's man page (description, environment, exit status,
// files); the commands and options come from the command table itself
// (tools/cli_doc). Pure.
#ifndef BALLAST_TOOLS_LBCTL_MAN_INFO_H_
#define BALLAST_TOOLS_LBCTL_MAN_INFO_H_

#include "tools/cli_doc/cli_doc.h"

namespace ballast::lbctl {

cli_doc::ManInfo LbctlManInfo();

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_MAN_INFO_H_

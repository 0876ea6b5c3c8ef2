# BGP/ECMP end-to-end tests (tests/e2e/bgp_*.sh): the ECMP lab
# (tools/lab/ecmp: a BIRD tor with multipath routes, two routers with BIRD
# and lbagent, which announces the VIPs through its BIRD). Root and bird2
# required; the scripts fail (never skip) without them. Included from
# tests/e2e/CMakeLists.txt after agent.cmake (_agent_env).
ballast_e2e_scripts(bgp 240 "${_agent_env}")

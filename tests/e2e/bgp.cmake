# BGP/ECMP end-to-end tests (tests/e2e/bgp_*.sh): the ECMP lab
# (tools/lab/ecmp: a BIRD tor with multipath routes, two or three routers
# with BIRD and lbagent, which announces the VIPs through its BIRD). Root and
# bird2 required; the scripts fail (never skip) without them. Included from
# tests/e2e/CMakeLists.txt after agent.cmake (_agent_env).
ballast_e2e_scripts(bgp 240 "${_agent_env}")
# bgp_churn runs two labs and 20 sequences of 600 connections: about 6
# minutes on 2 cores.
set_tests_properties(e2e_bgp_churn PROPERTIES TIMEOUT 540)

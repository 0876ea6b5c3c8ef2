# BGP/ECMP end-to-end tests (tests/e2e/bgp_*.sh): the ECMP lab
# (tools/lab/ecmp: a BIRD tor with multipath routes, two routers with BIRD,
# lbagent and ballast-announce). Root and bird2 required; the scripts fail
# (never skip) without them. Included from tests/e2e/CMakeLists.txt after
# agent.cmake (_agent_env).
set(_bgp_env ${_agent_env})
if(TARGET ballast-announce)
  list(APPEND _bgp_env "ANNOUNCE=$<TARGET_FILE:ballast-announce>")
else()
  list(APPEND _bgp_env "ANNOUNCE=${CMAKE_BINARY_DIR}/agent/bgp/ballast-announce")
endif()

ballast_e2e_scripts(bgp 240 "${_bgp_env}")

# The attack suite (tests/e2e/attack_suite.sh, issue 41): hostile classes of
# packets (tests/e2e/attack_send.py, scapy) against the health lab with
# long-lived connections; about a minute. Root and python3-scapy required;
# the script fails (never skips) without them. Included from
# tests/e2e/CMakeLists.txt after agent.cmake (_agent_env).
set(_attack_env ${_agent_env})
if(TARGET ballast-testbackend)
  list(APPEND _attack_env "TESTBACKEND=$<TARGET_FILE:ballast-testbackend>")
else()
  list(APPEND _attack_env
       "TESTBACKEND=${CMAKE_BINARY_DIR}/tools/testbackend/ballast-testbackend")
endif()

ballast_e2e_scripts(attack 240 "${_attack_env}")

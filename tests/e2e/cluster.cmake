# Cluster end-to-end tests (tests/e2e/cluster_*.sh): one netns lab per
# lbagent node, a real etcd cluster (3 members) in its own namespace, lbagent
# in cluster mode. Root and etcd required; the scripts fail (never skip)
# without them. Included from tests/e2e/CMakeLists.txt after health.cmake
# (_health_env: LBAGENT=, LBCTL=, LBDP=, TESTBACKEND=).
file(GLOB _cluster_tests RELATIVE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/cluster_*.sh)
list(REMOVE_ITEM _cluster_tests cluster_lib.sh)
foreach(_script ${_cluster_tests})
  string(REGEX REPLACE "\\.sh$" "" _name ${_script})
  add_test(NAME e2e_${_name} COMMAND ${CMAKE_CURRENT_LIST_DIR}/${_script})
  set_tests_properties(e2e_${_name} PROPERTIES
    LABELS e2e
    TIMEOUT 300
    RUN_SERIAL TRUE
    ENVIRONMENT "${_health_env}")
endforeach()

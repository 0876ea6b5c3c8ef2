# Run at install time (install(CODE) in deploy/CMakeLists.txt), so that the
# prefix is the one being installed to: `cmake --install` (/usr/local by
# default) or cpack's packages (/usr). In:
#   BALLAST_UNIT       the unit file in deploy/ (written for /usr)
#   BALLAST_GEN_DIR    where to write the unit with the prefix's paths
# The unit's /usr/sbin/ and /usr/share/doc/ paths follow the prefix; the
# units go where systemd looks for that prefix (/lib/systemd/system for
# /usr, as Debian 12 installs them; <prefix>/lib/systemd/system otherwise).
get_filename_component(_name "${BALLAST_UNIT}" NAME)
file(READ "${BALLAST_UNIT}" _unit)
string(REPLACE "/usr/sbin/" "${CMAKE_INSTALL_PREFIX}/sbin/" _unit "${_unit}")
string(REPLACE "/usr/share/doc/" "${CMAKE_INSTALL_PREFIX}/share/doc/" _unit "${_unit}")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_unitdir "/lib/systemd/system")
else()
  set(_unitdir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
set(_out "${BALLAST_GEN_DIR}/${_name}")
file(WRITE "${_out}" "${_unit}")
# file(INSTALL) puts $DESTDIR (cpack's staging directory) in front itself.
file(INSTALL DESTINATION "${_unitdir}" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES "${_out}")

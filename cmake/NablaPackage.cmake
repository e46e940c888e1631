# Install rules and the Debian package (docs/deploy.md).
#
#   cmake --install build [--prefix DIR]   the five programs, units, env files, docs
#   make package                           nabla_<version>_amd64.deb (CPack DEB)
#
# The package is built with CMAKE_INSTALL_PREFIX=/usr, so GNUInstallDirs puts
# the env files in /etc/nabla and the units in /usr/lib/systemd/system. Under
# another prefix everything moves with it (/usr/local/etc/nabla, ...), and the
# units name the paths they were installed to.
include(GNUInstallDirs)

install(TARGETS nabla nabla-injectd nabla-sniffd nabla-loadd nabla-tier
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(NABLA_BIN_DIR ${CMAKE_INSTALL_FULL_BINDIR})
set(NABLA_ENV_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/nabla)
set(NABLA_DOC_DIR ${CMAKE_INSTALL_FULL_DOCDIR})
foreach(unit nabla-injectd nabla-sniffd nabla-loadd)
  configure_file(${PROJECT_SOURCE_DIR}/packaging/${unit}.service.in
                 ${PROJECT_BINARY_DIR}/packaging/${unit}.service @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/${unit}.service
          DESTINATION lib/systemd/system)  # not LIBDIR: systemd has no multiarch path
endforeach()
# The env files are the admin's to edit: conffiles in the package.
install(FILES packaging/injectd.env packaging/sniffd.env packaging/loadd.env
        DESTINATION ${NABLA_ENV_DIR}
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES examples/campaign.toml DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nabla)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "nabla maintainers <nabla@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "fault and delay injection testbed: link gradients of distributed services")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # nabla_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# Runtime libraries from dpkg-shlibdeps; the programs the daemons and the
# demo run (iptables for rules, ip for namespaces and addresses) by name,
# and adduser, which the postinst runs for the group and the load agent's user.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "iptables, iproute2, adduser")
# nabla report lays its link graph out with Graphviz's dot; without it the
# page is written without the graph (docs/report.md).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "graphviz")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/conffiles.in
               ${PROJECT_BINARY_DIR}/packaging/debian/conffiles @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/packaging/debian/conffiles ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
include(CPack)

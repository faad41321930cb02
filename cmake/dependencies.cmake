# Third-party libraries, as targets named warden::<lib>.
#
# Debian ships static archives of every library Warden uses but Kerberos, which libgit2 needs
# only for HTTP Negotiate authentication (routed away, below). With WARDEN_STATIC_DEPS (the
# default) Warden links those archives and libstdc++ statically: the dynamic loader then maps 3 objects instead of 27 and
# resolves a few hundred symbols instead of ~7,500, so a `warden` process starts in ~1.3 ms
# instead of ~5 ms (tools/bench/diff_bench prints the figure). The cost: a security update of one of these
# libraries reaches Warden when Warden is rebuilt, not when the package is upgraded.
option(WARDEN_STATIC_DEPS "Link libgit2, OpenSSL, Nettle, LMDB, RE2, pugixml, libseccomp, hiredis and zlib statically" ON)

find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

# warden_archive(<name> [DEPENDS <target>...]): the imported static library
# warden_archive::<name> (lib<name>.a), which links what it depends on after itself.
function(warden_archive name)
  cmake_parse_arguments(A "" "" "DEPENDS" ${ARGN})
  find_library(WARDEN_ARCHIVE_${name} NAMES lib${name}.a REQUIRED NO_CACHE)
  add_library(warden_archive::${name} STATIC IMPORTED GLOBAL)
  set_target_properties(warden_archive::${name} PROPERTIES IMPORTED_LOCATION ${WARDEN_ARCHIVE_${name}}
                        INTERFACE_LINK_LIBRARIES "${A_DEPENDS}")
endfunction()

foreach(lib git2 crypto nettle lmdb re2 pugixml seccomp zlib hiredis)
  add_library(warden::${lib} INTERFACE IMPORTED GLOBAL)
endforeach()

pkg_check_modules(LIBGIT2 REQUIRED libgit2)
pkg_check_modules(LMDB REQUIRED lmdb)
pkg_check_modules(RE2 REQUIRED re2)
pkg_check_modules(LIBSECCOMP REQUIRED libseccomp)
pkg_check_modules(NETTLE REQUIRED nettle hogweed)  # Ed25519, HMAC, SHA-1 (common/ed25519.cc, runner/check/report_channel.cc)
pkg_check_modules(HIREDIS REQUIRED hiredis)  # the Redis StateStore (store/redis_state_store.cc)
find_package(OpenSSL 3 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(pugixml REQUIRED)

if(WARDEN_STATIC_DEPS)
  # libgit2's archive and what it was built against (pkg-config --static libgit2), then the
  # Kerberos GSS-API library it calls for Negotiate authentication, which Debian ships only
  # shared (runtime package libgssapi-krb5-2, a dependency of libgit2-dev).
  warden_archive(z)
  warden_archive(crypto DEPENDS Threads::Threads ${CMAKE_DL_LIBS})
  warden_archive(mbedcrypto)
  warden_archive(mbedx509 DEPENDS warden_archive::mbedcrypto)
  warden_archive(mbedtls DEPENDS warden_archive::mbedx509 warden_archive::mbedcrypto)
  warden_archive(http_parser)
  warden_archive(pcre2-8)
  # Not libssh2: libgit2's calls into it are answered in runner/workspace/libgit2_offline.cc, so no
  # OpenSSL comes with it.
  warden_archive(git2 DEPENDS warden_archive::mbedtls warden_archive::http_parser
                 warden_archive::pcre2-8 warden_archive::z rt Threads::Threads)
  warden_archive(gmp)
  warden_archive(nettle)
  warden_archive(hogweed DEPENDS warden_archive::nettle warden_archive::gmp)
  warden_archive(lmdb DEPENDS Threads::Threads)
  warden_archive(re2 DEPENDS Threads::Threads)
  warden_archive(pugixml)
  warden_archive(seccomp)
  warden_archive(hiredis)

  target_include_directories(warden::crypto INTERFACE ${OPENSSL_INCLUDE_DIR})
  target_link_libraries(warden::crypto INTERFACE warden_archive::crypto)
  target_include_directories(warden::nettle INTERFACE ${NETTLE_INCLUDE_DIRS})
  target_link_libraries(warden::nettle INTERFACE warden_archive::hogweed)
  target_link_libraries(warden::zlib INTERFACE warden_archive::z)
  target_include_directories(warden::git2 INTERFACE ${LIBGIT2_INCLUDE_DIRS})
  target_link_libraries(warden::git2 INTERFACE warden_archive::git2)
  # libgit2's network set-up (the system CA bundle, parsed in every process, and Kerberos for
  # HTTP Negotiate, six shared libraries) routed to runner/workspace/libgit2_offline.cc: Warden opens
  # local repositories only. The shims are linked into every executable that links libgit2.
  set(WARDEN_LIBGIT2_WRAPPED mbedtls_x509_crt_parse_file gss_indicate_mechs gss_import_name gss_init_sec_context
      gss_display_status gss_delete_sec_context gss_release_buffer gss_release_name gss_release_oid_set
      GSS_C_NT_HOSTBASED_SERVICE)
  list(TRANSFORM WARDEN_LIBGIT2_WRAPPED PREPEND "-Wl,--wrap=")
  add_library(warden_libgit2_offline OBJECT ${PROJECT_SOURCE_DIR}/runner/workspace/libgit2_offline.cc)
  # Without debug information: binutils 2.40's ld crashes on a wrapped data symbol
  # (GSS_C_NT_HOSTBASED_SERVICE) that debug information refers to.
  target_compile_options(warden_libgit2_offline PRIVATE -g0)
  target_link_options(warden::git2 INTERFACE ${WARDEN_LIBGIT2_WRAPPED})
  target_link_libraries(warden::git2 INTERFACE $<TARGET_OBJECTS:warden_libgit2_offline>)
  target_compile_definitions(warden::git2 INTERFACE WARDEN_LIBGIT2_OFFLINE=1)
  target_include_directories(warden::lmdb INTERFACE ${LMDB_INCLUDE_DIRS})
  target_link_libraries(warden::lmdb INTERFACE warden_archive::lmdb)
  target_include_directories(warden::re2 INTERFACE ${RE2_INCLUDE_DIRS})
  target_link_libraries(warden::re2 INTERFACE warden_archive::re2)
  target_include_directories(warden::pugixml INTERFACE $<TARGET_PROPERTY:pugixml::pugixml,INTERFACE_INCLUDE_DIRECTORIES>)
  target_link_libraries(warden::pugixml INTERFACE warden_archive::pugixml)
  target_include_directories(warden::seccomp INTERFACE ${LIBSECCOMP_INCLUDE_DIRS})
  target_link_libraries(warden::seccomp INTERFACE warden_archive::seccomp)
  target_link_libraries(warden::hiredis INTERFACE warden_archive::hiredis)
  if(NOT WARDEN_SANITIZE AND NOT WARDEN_FUZZ)
    # The sanitizers replace operator new and the allocator: they need the shared libstdc++.
    add_link_options(-static-libstdc++ -static-libgcc)
  endif()
else()
  target_link_libraries(warden::crypto INTERFACE OpenSSL::Crypto)
  pkg_check_modules(NETTLE_SHARED REQUIRED IMPORTED_TARGET nettle hogweed)
  target_link_libraries(warden::nettle INTERFACE PkgConfig::NETTLE_SHARED)
  target_link_libraries(warden::zlib INTERFACE ZLIB::ZLIB)
  pkg_check_modules(LIBGIT2_SHARED REQUIRED IMPORTED_TARGET libgit2)
  target_link_libraries(warden::git2 INTERFACE PkgConfig::LIBGIT2_SHARED)
  pkg_check_modules(LMDB_SHARED REQUIRED IMPORTED_TARGET lmdb)
  target_link_libraries(warden::lmdb INTERFACE PkgConfig::LMDB_SHARED)
  pkg_check_modules(RE2_SHARED REQUIRED IMPORTED_TARGET re2)
  target_link_libraries(warden::re2 INTERFACE PkgConfig::RE2_SHARED)
  target_link_libraries(warden::pugixml INTERFACE pugixml::pugixml)
  pkg_check_modules(LIBSECCOMP_SHARED REQUIRED IMPORTED_TARGET libseccomp)
  target_link_libraries(warden::seccomp INTERFACE PkgConfig::LIBSECCOMP_SHARED)
  pkg_check_modules(HIREDIS_SHARED REQUIRED IMPORTED_TARGET hiredis)
  target_link_libraries(warden::hiredis INTERFACE PkgConfig::HIREDIS_SHARED)
endif()

# gRPC and protobuf, for the kernel service (service/, `warden-grpc`): only that binary links
# them, so the `warden` command line starts as fast without them. Static like the rest (one
# copy of OpenSSL in the process): every archive pkg-config names for grpc++ and protobuf, in
# one linker group (their order among themselves does not matter then).
option(WARDEN_BUILD_SERVICE "Build warden-grpc: `warden serve` and the gRPC clients" ON)
if(WARDEN_BUILD_SERVICE)
  find_program(WARDEN_PROTOC protoc REQUIRED)
  find_program(WARDEN_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  find_program(WARDEN_GRPC_PYTHON_PLUGIN grpc_python_plugin REQUIRED)
  pkg_check_modules(GRPCPP REQUIRED grpc++ protobuf)
  add_library(warden::grpc INTERFACE IMPORTED GLOBAL)
  target_include_directories(warden::grpc INTERFACE ${GRPCPP_INCLUDE_DIRS})
  if(WARDEN_STATIC_DEPS)
    execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --static --libs-only-l grpc++ protobuf
                    OUTPUT_VARIABLE grpc_flags OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
    separate_arguments(grpc_flags UNIX_COMMAND "${grpc_flags}")
    set(grpc_archives "")
    set(grpc_shared "")
    foreach(flag grpc++_reflection ${grpc_flags})
      string(REGEX REPLACE "^-l" "" name "${flag}")
      find_library(WARDEN_GRPC_ARCHIVE_${name} NAMES lib${name}.a NO_CACHE)
      if(WARDEN_GRPC_ARCHIVE_${name})
        list(APPEND grpc_archives ${WARDEN_GRPC_ARCHIVE_${name}})
      else()
        list(APPEND grpc_shared ${name})  # dl, rt, atomic: glibc's and GCC's, shared
      endif()
    endforeach()
    list(REMOVE_DUPLICATES grpc_archives)
    list(REMOVE_DUPLICATES grpc_shared)
    string(JOIN "," grpc_group ${grpc_archives})
    target_link_libraries(warden::grpc INTERFACE "-Wl,--start-group,${grpc_group},--end-group" ${grpc_shared}
                          Threads::Threads)
  else()
    target_link_libraries(warden::grpc INTERFACE ${GRPCPP_LINK_LIBRARIES} -lgrpc++_reflection)
  endif()
endif()

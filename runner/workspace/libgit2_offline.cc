// libgit2 as Warden links it (cmake/dependencies.cmake, WARDEN_STATIC_DEPS): local
// repositories only. Warden never fetches or pushes, so libgit2's network set-up is routed
// here by the linker (--wrap=<symbol> sends libgit2's calls to __wrap_<symbol>):
//
// - The system CA bundle, which git_libgit2_init parses with mbedTLS in every process
//   (4.5 ms): nothing is loaded, so an HTTPS remote could only fail verification.
// - Kerberos (HTTP Negotiate authentication), whose six shared libraries every process would
//   otherwise map and relocate at start-up (0.45 ms): GSS-API reports itself unavailable, so
//   libgit2 offers no Negotiate authentication.
// - libssh2 (the ssh:// transport), which is not linked at all: it would bring OpenSSL's
//   libcrypto, whose provider tables the loader relocates in every process (0.35 ms), into a
//   binary that otherwise needs none of it. The functions libgit2 calls are defined here
//   instead (not wrapped: nothing of libssh2 is left to wrap): libssh2_init() succeeds, since
//   git_libgit2_init() fails without it, and a session can never be created, so an ssh://
//   remote fails with libgit2's "failed to initialize SSH session".
//
// Each function answers as the real one does when it cannot do its job, never "success".
#include <libssh2.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// mbedTLS: MBEDTLS_ERR_X509_FILE_IO_ERROR, "read or write of file failed".
int __wrap_mbedtls_x509_crt_parse_file(void* /*chain*/, const char* /*path*/) { return -0x2900; }

// GSS-API (RFC 2744), opaque handles as void*. GSS_S_FAILURE is routine error 13.
using OM_uint32 = std::uint32_t;
constexpr OM_uint32 kGssFailure = OM_uint32{13} << 16;
constexpr OM_uint32 kGssComplete = 0;

OM_uint32 __wrap_gss_indicate_mechs(OM_uint32* minor, void** /*mech_set*/) {
  if (minor) *minor = 0;
  return kGssFailure;
}
OM_uint32 __wrap_gss_import_name(OM_uint32* minor, void* /*name_buffer*/, void* /*name_type*/, void** /*output_name*/) {
  if (minor) *minor = 0;
  return kGssFailure;
}
OM_uint32 __wrap_gss_init_sec_context(OM_uint32* minor, void*, void**, void*, void*, OM_uint32, OM_uint32, void*, void*,
                                      void**, void*, OM_uint32*, OM_uint32*) {
  if (minor) *minor = 0;
  return kGssFailure;
}
OM_uint32 __wrap_gss_display_status(OM_uint32* minor, OM_uint32, int, void*, OM_uint32*, void*) {
  if (minor) *minor = 0;
  return kGssFailure;
}
// Nothing was ever allocated, so releasing succeeds trivially.
OM_uint32 __wrap_gss_delete_sec_context(OM_uint32* minor, void**, void*) {
  if (minor) *minor = 0;
  return kGssComplete;
}
OM_uint32 __wrap_gss_release_buffer(OM_uint32* minor, void*) {
  if (minor) *minor = 0;
  return kGssComplete;
}
OM_uint32 __wrap_gss_release_name(OM_uint32* minor, void**) {
  if (minor) *minor = 0;
  return kGssComplete;
}
OM_uint32 __wrap_gss_release_oid_set(OM_uint32* minor, void**) {
  if (minor) *minor = 0;
  return kGssComplete;
}
// The name type libgit2 passes to gss_import_name, which is never reached.
void* __wrap_GSS_C_NT_HOSTBASED_SERVICE = nullptr;

}  // extern "C"

// libssh2, with the prototypes of its own header (libssh2-1-dev), so the compiler checks each
// definition against what libgit2 was built to call. Only libssh2_init and libssh2_exit are
// reached; every other answer is libssh2's own for "no session".
int libssh2_init(int) { return 0; }
void libssh2_exit() {}
LIBSSH2_SESSION* libssh2_session_init_ex(LIBSSH2_ALLOC_FUNC((*)), LIBSSH2_FREE_FUNC((*)), LIBSSH2_REALLOC_FUNC((*)), void*) {
  return nullptr;
}
void** libssh2_session_abstract(LIBSSH2_SESSION*) { return nullptr; }
int libssh2_session_handshake(LIBSSH2_SESSION*, libssh2_socket_t) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_session_disconnect_ex(LIBSSH2_SESSION*, int, const char*, const char*) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_session_free(LIBSSH2_SESSION*) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_session_last_error(LIBSSH2_SESSION*, char** errmsg, int* errmsg_len, int) {
  static char kMessage[] = "ssh is not available in this build of Warden";
  if (errmsg) *errmsg = kMessage;
  if (errmsg_len) *errmsg_len = sizeof kMessage - 1;
  return LIBSSH2_ERROR_BAD_USE;
}
int libssh2_session_method_pref(LIBSSH2_SESSION*, int, const char*) { return LIBSSH2_ERROR_BAD_USE; }
void libssh2_session_set_blocking(LIBSSH2_SESSION*, int) {}
const char* libssh2_session_hostkey(LIBSSH2_SESSION*, size_t* len, int* type) {
  if (len) *len = 0;
  if (type) *type = LIBSSH2_HOSTKEY_TYPE_UNKNOWN;
  return nullptr;
}
const char* libssh2_hostkey_hash(LIBSSH2_SESSION*, int) { return nullptr; }
LIBSSH2_KNOWNHOSTS* libssh2_knownhost_init(LIBSSH2_SESSION*) { return nullptr; }
int libssh2_knownhost_readfile(LIBSSH2_KNOWNHOSTS*, const char*, int) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_knownhost_checkp(LIBSSH2_KNOWNHOSTS*, const char*, int, const char*, size_t, int, libssh2_knownhost**) {
  return LIBSSH2_KNOWNHOST_CHECK_FAILURE;
}
void libssh2_knownhost_free(LIBSSH2_KNOWNHOSTS*) {}
LIBSSH2_AGENT* libssh2_agent_init(LIBSSH2_SESSION*) { return nullptr; }
int libssh2_agent_connect(LIBSSH2_AGENT*) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_agent_disconnect(LIBSSH2_AGENT*) { return LIBSSH2_ERROR_BAD_USE; }
void libssh2_agent_free(LIBSSH2_AGENT*) {}
int libssh2_agent_list_identities(LIBSSH2_AGENT*) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_agent_get_identity(LIBSSH2_AGENT*, libssh2_agent_publickey**, libssh2_agent_publickey*) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_agent_userauth(LIBSSH2_AGENT*, const char*, libssh2_agent_publickey*) { return LIBSSH2_ERROR_BAD_USE; }
char* libssh2_userauth_list(LIBSSH2_SESSION*, const char*, unsigned int) { return nullptr; }
int libssh2_userauth_authenticated(LIBSSH2_SESSION*) { return 0; }
int libssh2_userauth_password_ex(LIBSSH2_SESSION*, const char*, unsigned int, const char*, unsigned int,
                                 LIBSSH2_PASSWD_CHANGEREQ_FUNC((*))) {
  return LIBSSH2_ERROR_BAD_USE;
}
int libssh2_userauth_keyboard_interactive_ex(LIBSSH2_SESSION*, const char*, unsigned int,
                                             LIBSSH2_USERAUTH_KBDINT_RESPONSE_FUNC((*))) {
  return LIBSSH2_ERROR_BAD_USE;
}
int libssh2_userauth_publickey(LIBSSH2_SESSION*, const char*, const unsigned char*, size_t,
                               LIBSSH2_USERAUTH_PUBLICKEY_SIGN_FUNC((*)), void**) {
  return LIBSSH2_ERROR_BAD_USE;
}
int libssh2_userauth_publickey_fromfile_ex(LIBSSH2_SESSION*, const char*, unsigned int, const char*, const char*,
                                           const char*) {
  return LIBSSH2_ERROR_BAD_USE;
}
int libssh2_userauth_publickey_frommemory(LIBSSH2_SESSION*, const char*, size_t, const char*, size_t, const char*, size_t,
                                          const char*) {
  return LIBSSH2_ERROR_BAD_USE;
}
LIBSSH2_CHANNEL* libssh2_channel_open_ex(LIBSSH2_SESSION*, const char*, unsigned int, unsigned int, unsigned int, const char*,
                                         unsigned int) {
  return nullptr;
}
int libssh2_channel_process_startup(LIBSSH2_CHANNEL*, const char*, unsigned int, const char*, unsigned int) {
  return LIBSSH2_ERROR_BAD_USE;
}
ssize_t libssh2_channel_read_ex(LIBSSH2_CHANNEL*, int, char*, size_t) { return LIBSSH2_ERROR_BAD_USE; }
ssize_t libssh2_channel_write_ex(LIBSSH2_CHANNEL*, int, const char*, size_t) { return LIBSSH2_ERROR_BAD_USE; }
void libssh2_channel_set_blocking(LIBSSH2_CHANNEL*, int) {}
int libssh2_channel_close(LIBSSH2_CHANNEL*) { return LIBSSH2_ERROR_BAD_USE; }
int libssh2_channel_free(LIBSSH2_CHANNEL*) { return LIBSSH2_ERROR_BAD_USE; }

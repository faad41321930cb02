// libgit2 as Warden links it (cmake/dependencies.cmake, WARDEN_STATIC_DEPS): local
// repositories only. Warden never fetches or pushes, so libgit2's network set-up is routed
// here by the linker (--wrap=<symbol> sends libgit2's calls to __wrap_<symbol>):
//
// - The system CA bundle, which git_libgit2_init parses with mbedTLS in every process
//   (4.5 ms): nothing is loaded, so an HTTPS remote could only fail verification.
// - Kerberos (HTTP Negotiate authentication), whose six shared libraries every process would
//   otherwise map and relocate at start-up (0.45 ms): GSS-API reports itself unavailable, so
//   libgit2 offers no Negotiate authentication.
//
// Each function answers as the real one does when it cannot do its job, never "success".
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

#include "service/tls_credentials.h"

#include <fcntl.h>
#include <grpcpp/security/server_credentials.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "common/file.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxPemBytes = uint64_t{1} << 20;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

// OpenSSL's reason for the last failure, and its error queue emptied for the next call.
std::string openssl_reason() {
  unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "not understood";
  const char* reason = ERR_reason_error_string(code);
  return reason ? reason : "error " + std::to_string(code);
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// A file's text; never blocks (a FIFO given as a file is refused, not waited on). A secret
// is not followed through a link and must be the server's user's alone.
Result<std::string> read_pem_file(const fs::path& path, std::string_view flag, bool secret) {
  std::string what = std::string(flag) + " " + path.string();
  struct stat st {};
  if (secret && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return fail(Errc::invalid_argument, what + ": a symbolic link; give the key file itself (a link could be "
                                               "pointed elsewhere by whoever can write its directory)");
  }
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (secret ? O_NOFOLLOW : 0);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd) return std::unexpected(errno_error(what, errno));
  if (::fstat(fd.get(), &st) != 0) return std::unexpected(errno_error(what, errno));
  if (!S_ISREG(st.st_mode)) return fail(Errc::invalid_argument, what + ": not a regular file");
  if (secret && st.st_uid != ::geteuid()) {
    return fail(Errc::invalid_argument, what + ": owned by uid " + std::to_string(st.st_uid) +
                                            ", not by the server's user: chown " + std::to_string(::geteuid()) + " " +
                                            path.string());
  }
  if (secret && (st.st_mode & 077) != 0) {
    return fail(Errc::invalid_argument, what + ": mode " + mode_text(st.st_mode) +
                                            " lets group or others at the server's private key: chmod 0600 " +
                                            path.string());
  }
  auto text = read_fd(fd.get(), kMaxPemBytes, what);
  if (!text) return std::unexpected(text.error());
  return text;
}

// One PEM block: its type ("CERTIFICATE", "PRIVATE KEY", ...), headers and DER bytes.
struct PemBlock {
  std::string name;
  std::string header;
  std::string der;
};

// Every PEM block of `text`, in order; text between blocks is ignored, as OpenSSL does.
Result<std::vector<PemBlock>> pem_blocks(const std::string& text, const std::string& what) {
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) return fail(Errc::internal, "BIO_new_mem_buf failed");
  std::vector<PemBlock> blocks;
  for (;;) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long len = 0;
    if (PEM_read_bio(bio.get(), &name, &header, &data, &len) != 1) {
      unsigned long code = ERR_peek_last_error();
      if (ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE) {
        ERR_clear_error();  // the end of the text
        break;
      }
      return fail(Errc::invalid_argument, what + ": PEM block " + std::to_string(blocks.size() + 1) +
                                              " does not parse (" + openssl_reason() + ")");
    }
    blocks.push_back({name, header, std::string(reinterpret_cast<const char*>(data), static_cast<size_t>(len))});
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
  }
  return blocks;
}

// The certificates of a file that must hold certificates and nothing else.
Result<std::vector<X509Ptr>> certificates(const std::string& text, const std::string& what) {
  auto blocks = pem_blocks(text, what);
  if (!blocks) return std::unexpected(blocks.error());
  if (blocks->empty()) return fail(Errc::invalid_argument, what + ": holds no PEM certificate");
  std::vector<X509Ptr> out;
  for (size_t i = 0; i < blocks->size(); ++i) {
    const PemBlock& block = (*blocks)[i];
    std::string which = what + ": PEM block " + std::to_string(i + 1);
    if (block.name != "CERTIFICATE") {
      return fail(Errc::invalid_argument, which + " is a \"" + block.name + "\", not a CERTIFICATE");
    }
    const auto* der = reinterpret_cast<const unsigned char*>(block.der.data());
    X509Ptr cert(d2i_X509(nullptr, &der, static_cast<long>(block.der.size())));
    if (!cert) return fail(Errc::invalid_argument, which + " is not an X.509 certificate (" + openssl_reason() + ")");
    out.push_back(std::move(cert));
  }
  return out;
}

// Never asked: a key that needs a passphrase is refused before OpenSSL would prompt for one.
int no_passphrase(char*, int, int, void*) { return -1; }

Result<KeyPtr> private_key(const std::string& text, const std::string& what) {
  auto blocks = pem_blocks(text, what);
  if (!blocks) return std::unexpected(blocks.error());
  int keys = 0;
  for (const PemBlock& block : *blocks) {
    bool encrypted = block.name == "ENCRYPTED PRIVATE KEY" || block.header.find("ENCRYPTED") != std::string::npos;
    if (encrypted) {
      return fail(Errc::invalid_argument, what + ": an encrypted key; the server cannot ask for its passphrase: "
                                                 "openssl pkey -in KEY -out PLAIN_KEY (then chmod 0600 PLAIN_KEY)");
    }
    if (block.name.ends_with("PRIVATE KEY")) ++keys;
  }
  if (keys != 1) {
    return fail(Errc::invalid_argument, what + ": holds " + std::to_string(keys) + " PEM private keys, expected one");
  }
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) return fail(Errc::internal, "BIO_new_mem_buf failed");
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) return fail(Errc::invalid_argument, what + ": the private key does not parse (" + openssl_reason() + ")");
  return key;
}

Status check_validity(X509* cert, const std::string& what) {
  auto when = [](const ASN1_TIME* t) {
    BioPtr out(BIO_new(BIO_s_mem()));
    if (!out || ASN1_TIME_print(out.get(), t) != 1) return std::string("?");
    char* data = nullptr;
    long len = BIO_get_mem_data(out.get(), &data);
    return std::string(data, static_cast<size_t>(len));
  };
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    return fail(Errc::invalid_argument, what + ": the certificate expired on " + when(X509_get0_notAfter(cert)));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
    return fail(Errc::invalid_argument, what + ": the certificate is not valid before " + when(X509_get0_notBefore(cert)));
  }
  return {};
}

}  // namespace

Result<TlsCredentials> load_tls_credentials(const TlsFiles& files) {
  TlsCredentials out;
  auto chain_text = read_pem_file(files.cert, "--tls-cert", false);
  if (!chain_text) return std::unexpected(chain_text.error());
  std::string chain_what = "--tls-cert " + files.cert.string();
  auto chain = certificates(*chain_text, chain_what);
  if (!chain) return std::unexpected(chain.error());
  if (Status valid = check_validity(chain->front().get(), chain_what); !valid) return std::unexpected(valid.error());

  auto key_text = read_pem_file(files.key, "--tls-key", true);
  if (!key_text) return std::unexpected(key_text.error());
  auto key = private_key(*key_text, "--tls-key " + files.key.string());
  if (!key) return std::unexpected(key.error());
  if (X509_check_private_key(chain->front().get(), key->get()) != 1) {
    ERR_clear_error();
    return fail(Errc::invalid_argument, "--tls-key " + files.key.string() + " is not the key of the first certificate in " +
                                            chain_what);
  }
  out.cert_chain = std::move(*chain_text);
  out.private_key = std::move(*key_text);

  if (!files.client_ca.empty()) {
    auto ca_text = read_pem_file(files.client_ca, "--client-ca", false);
    if (!ca_text) return std::unexpected(ca_text.error());
    auto cas = certificates(*ca_text, "--client-ca " + files.client_ca.string());
    if (!cas) return std::unexpected(cas.error());
    out.client_ca = std::move(*ca_text);
  }
  return out;
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsCredentials& credentials) {
  grpc::SslServerCredentialsOptions options(credentials.client_ca.empty()
                                                ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = credentials.client_ca;
  options.pem_key_cert_pairs.push_back({credentials.private_key, credentials.cert_chain});
  return grpc::SslServerCredentials(options);
}

}  // namespace warden::service

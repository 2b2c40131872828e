#include "util/digest.h"

#include <openssl/evp.h>

namespace brig::util {

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest fails only without memory; the empty string is then no digest of anything.
  if (!EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr)) return "";
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

}  // namespace brig::util

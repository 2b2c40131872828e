#include "util/digest.h"

#include <sha2.h>

namespace brig::util {

std::string Sha256Hex(std::string_view data) {
  char hex[SHA256_DIGEST_STRING_LENGTH];
  SHA256Data(reinterpret_cast<const uint8_t*>(data.data()), data.size(), hex);
  return hex;
}

}  // namespace brig::util

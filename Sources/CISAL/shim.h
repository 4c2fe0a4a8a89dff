// Intel's ISA-L (Debian's libisal-dev): CRC32 and CRC32C with the instruction set picked at run time
// (PCLMULQDQ, SSE4.2 crc32, AVX-512 where there is one), for S3's flexible checksums. No logic lives here.
#ifndef RESUMECTL_CISAL_H
#define RESUMECTL_CISAL_H
#include <isa-l/crc.h>
#endif

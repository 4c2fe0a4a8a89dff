// Nothing to import: loader.c defines the libcurl, libcrypto and ISA-L functions ResumeKit calls (declared
// in their own headers, modules CCurl, CLibCrypto, CISAL), each loading its library on first use. ResumeKit
// depends on this target only to link them.
#ifndef RESUMECTL_CLIBRARYLOADER_H
#define RESUMECTL_CLIBRARYLOADER_H
#endif

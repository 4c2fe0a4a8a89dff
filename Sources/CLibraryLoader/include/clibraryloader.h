// Nothing to import: loader.c defines the libcurl, libcrypto, ISA-L and libxml2 functions ResumeKit and
// ResumeMarkup call (declared in their own headers, modules CCurl, CLibCrypto, CISAL, CLibXML2), each loading
// its library on first use. Those targets depend on this one only to link them.
#ifndef RESUMECTL_CLIBRARYLOADER_H
#define RESUMECTL_CLIBRARYLOADER_H
#endif

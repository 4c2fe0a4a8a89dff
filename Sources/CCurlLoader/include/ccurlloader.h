// Nothing to import: loader.c defines libcurl's own functions (declared in <curl/curl.h>, module CCurl),
// each loading libcurl.so.4 on first use. ResumeKit depends on this target only to link them.
#ifndef RESUMECTL_CCURLLOADER_H
#define RESUMECTL_CCURLLOADER_H
#endif

// glibc's mallopt(3), which the Swift view of glibc leaves out (malloc.h is not in its module map):
// `serve --store s3://` keeps glibc's mmap threshold from rising with every part-sized block it frees.
#ifndef RESUMECTL_CMALLOC_H
#define RESUMECTL_CMALLOC_H
#include <malloc.h>
#endif

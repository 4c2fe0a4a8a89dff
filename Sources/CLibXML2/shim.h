// libxml2 for Swift: the tree API that ResumeS3's XMLTree reads S3's answers with. No logic lives here.
#ifndef RESUMECTL_CLIBXML2_H
#define RESUMECTL_CLIBXML2_H
#include <libxml/parser.h>
#include <libxml/tree.h>
#endif

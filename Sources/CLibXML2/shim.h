// libxml2 for Swift: the tree API ResumeMarkup reads S3's XML answers with, and the HTML parser it reads folder
// listings with. No logic lives here, and no library is linked: CLibraryLoader loads libxml2 on first use.
#ifndef RESUMECTL_CLIBXML2_H
#define RESUMECTL_CLIBXML2_H
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/HTMLparser.h>
#endif

// libxml2 for Swift: the streaming reader ResumeMarkup reads XML (S3's answers, Metalinks) with, and the HTML
// parser and tree it reads folder listings with. No logic lives here, and no library is linked: CLibraryLoader
// loads libxml2 on first use.
#ifndef RESUMECTL_CLIBXML2_H
#define RESUMECTL_CLIBXML2_H
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/HTMLparser.h>
#include <libxml/xmlreader.h>
#endif

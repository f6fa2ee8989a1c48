// CPolkit: libpolkit-gobject-1 for Swift.
// Why this header exists: polkit refuses to be included unless the caller
// acknowledges that its API may change; that define must precede the header.
#ifndef CPOLKIT_SHIM_H
#define CPOLKIT_SHIM_H
#define POLKIT_I_KNOW_API_IS_SUBJECT_TO_CHANGE 1
#include <polkit/polkit.h>
#endif

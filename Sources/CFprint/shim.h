// CFprint: libfprint-2 for Swift.
// Why this header exists: FP_DEVICE_ERROR / FP_DEVICE_RETRY are macros, and
// GPtrArray element access is a macro; helpers below stand in for them.
#ifndef CFPRINT_SHIM_H
#define CFPRINT_SHIM_H
#include <fprint.h>

static inline GQuark cfprint_device_error_quark(void) { return FP_DEVICE_ERROR; }
static inline GQuark cfprint_device_retry_quark(void) { return FP_DEVICE_RETRY; }
static inline void *cfprint_ptr_array_index(GPtrArray *array, guint index) { return g_ptr_array_index(array, index); }
#endif

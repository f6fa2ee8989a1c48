// CLazyLibrary: a C library loaded at its first call, not at start-up.
// Why: localauthd needs libcrypto and tpm2-tss only when a right is touched,
// and most runs never touch one; linked, they cost every start 1.85 MB of
// resident memory and their relocations (BENCHMARKS.md, issue 25). COpenSSL
// and CTSS2 define each function the project calls with the prototype of the
// library's own header (so the compiler checks it), as a forwarder that
// resolves the real function once with dlopen/dlsym.
#ifndef CLAZY_LIBRARY_H
#define CLAZY_LIBRARY_H
#include <stdatomic.h>

typedef struct {
    const char *soname;          // the exact SONAME the headers were built against
    void *_Atomic handle;        // dlopen's handle once loaded
} LazyLibrary;

/// The address of `name` in `library`, loading the library at the first call
/// (thread-safe). A library or symbol that cannot be found is a broken
/// installation (the packages depend on them): it prints why and aborts.
void *lazy_library_symbol(LazyLibrary *library, const char *name);

/// The library's `name`, resolved at the forwarder's first call and kept in
/// the forwarder's own `resolved`: every later call costs one atomic load.
/// (Inline, so a forwarder is no slower than one that spells this out.)
static inline void *lazy_library_function(LazyLibrary *library, const char *name, void *_Atomic *resolved) {
    void *function = atomic_load_explicit(resolved, memory_order_acquire);
    if (!function) {
        function = lazy_library_symbol(library, name);
        atomic_store_explicit(resolved, function, memory_order_release);
    }
    return function;
}

/// Defines `name` (declared by the library's header) as a forwarder to the
/// library's `name`, resolved at its first call.
#define LAZY_FUNCTION(library, ret, name, params, args)                                            \
    ret name params {                                                                               \
        static void *_Atomic resolved;                                                              \
        return ((__typeof__(&name))lazy_library_function(&library, #name, &resolved))args;          \
    }

/// The same for a function that returns nothing (C allows no `return` of a void call).
#define LAZY_PROCEDURE(library, name, params, args)                                                \
    void name params {                                                                              \
        static void *_Atomic resolved;                                                              \
        ((__typeof__(&name))lazy_library_function(&library, #name, &resolved))args;                 \
    }
#endif

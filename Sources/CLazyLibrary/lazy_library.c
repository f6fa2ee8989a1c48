#include "lazy_library.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static _Noreturn void broken_installation(const char *what, const char *soname, const char *why) {
    // The journal's error priority, as localauthd's other start-up lines.
    fprintf(stderr, "<3>cannot load %s from %s: %s\n", what, soname, why ? why : "unknown error");
    abort();
}

void *lazy_library_symbol(LazyLibrary *library, const char *name) {
    void *handle = atomic_load_explicit(&library->handle, memory_order_acquire);
    if (!handle) {
        // dlopen counts references: two threads racing here load the library once.
        handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
        if (!handle) broken_installation("the library", library->soname, dlerror());
        atomic_store_explicit(&library->handle, handle, memory_order_release);
    }
    void *symbol = dlsym(handle, name);
    if (!symbol) broken_installation(name, library->soname, dlerror());
    return symbol;
}

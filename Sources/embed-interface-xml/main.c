// embed-interface-xml OUTPUT NAME=FILE...: writes OUTPUT, a Swift file that
// declares `Interfaces.NAME`, a string of exactly FILE's bytes, for each pair.
// The EmbedInterfaceXML build-tool plugin runs it at build time on dbus/*.xml
// (Plugins/EmbedInterfaceXML/plugin.swift says why). In C: it is built before
// anything else in a fresh build, and a C program needs no Swift runtime to
// link (the release build links Swift statically).
//
// Each file becomes a multi-line string literal with one line per line of the
// file: every byte as itself but `\` `"` (escaped, so no `"""` ends the
// literal), control characters (escaped: `\n` then a `\` continuation at each
// line's end, so the literal's own line breaks are not part of the string).
// The closing `"""` is at column 0, so no indentation is removed. A file that
// is not UTF-8 is refused (Swift source must be).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *path) {
    fprintf(stderr, "embed-interface-xml: %s: %s: %s\n", path, what, errno ? strerror(errno) : "invalid");
    return 1;
}

static unsigned char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    size_t capacity = 65536, used = 0;
    unsigned char *bytes = malloc(capacity);
    while (bytes) {
        used += fread(bytes + used, 1, capacity - used, file);
        if (used < capacity) break;
        unsigned char *grown = realloc(bytes, capacity *= 2);
        if (!grown) free(bytes);
        bytes = grown;
    }
    int failed = ferror(file);
    fclose(file);
    if (failed) { free(bytes); return NULL; }
    *length = used;
    return bytes;
}

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, at most U+10FFFF.
static int is_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t more;
        unsigned min;
        unsigned value;
        if (c < 0x80) { i++; continue; }
        else if ((c & 0xE0) == 0xC0) { more = 1; min = 0x80; value = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { more = 2; min = 0x800; value = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { more = 3; min = 0x10000; value = c & 0x07; }
        else return 0;
        if (n - i <= more) return 0;
        for (size_t k = 1; k <= more; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            value = (value << 6) | (s[i + k] & 0x3F);
        }
        if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
        i += more + 1;
    }
    return 1;
}

static void literal(FILE *out, const unsigned char *s, size_t n) {
    fputs("\"\"\"\n", out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        switch (c) {
        case '\n': fputs(i + 1 < n ? "\\n\\\n" : "\\n", out); break;
        case '\\': fputs("\\\\", out); break;
        case '"': fputs("\\\"", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (c < 0x20 || c == 0x7F) fprintf(out, "\\u{%X}", c);
            else fputc(c, out);
        }
    }
    fputs("\n\"\"\"", out);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: embed-interface-xml OUTPUT NAME=FILE...\n");
        return 2;
    }
    const char *output = argv[1];
    FILE *out = fopen(output, "w");
    if (!out) return fail("cannot write", output);
    fputs("// Generated at build time by embed-interface-xml (the EmbedInterfaceXML plugin): do not edit.\n"
          "extension Interfaces {\n", out);
    for (int a = 2; a < argc; a++) {
        char *pair = argv[a];
        char *equals = strchr(pair, '=');
        if (!equals || equals == pair) { errno = 0; return fail("not NAME=FILE", pair); }
        *equals = 0;
        const char *path = equals + 1;
        size_t length = 0;
        errno = 0;
        unsigned char *bytes = read_file(path, &length);
        if (!bytes) return fail("cannot read", path);
        errno = 0;
        if (!is_utf8(bytes, length)) return fail("not UTF-8", path);
        const char *slash = strrchr(path, '/');
        fprintf(out, "    /// %s\n    package static let %s = ", slash ? slash + 1 : path, pair);
        literal(out, bytes, length);
        fputs("\n", out);
        free(bytes);
    }
    fputs("}\n", out);
    if (fclose(out) != 0) return fail("cannot write", output);
    return 0;
}

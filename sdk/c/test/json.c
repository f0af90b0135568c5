/* A small JSON reader for the C SDK's tests. Not part of the SDK. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t i;
} parser;

static void fail(parser *p, const char *what) {
    fprintf(stderr, "json: %s at offset %zu\n", what, p->i);
    exit(2);
}

static void ws(parser *p) {
    while (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\r' || p->s[p->i] == '\t') p->i++;
}

static void put_utf8(char **buf, size_t *len, size_t *cap, unsigned cp) {
    if (*len + 4 >= *cap) {
        *cap = *cap * 2 + 16;
        *buf = realloc(*buf, *cap);
    }
    char *b = *buf + *len;
    if (cp < 0x80) {
        b[0] = (char)cp;
        *len += 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3F));
        *len += 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12);
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        *len += 3;
    } else {
        b[0] = (char)(0xF0 | cp >> 18);
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        *len += 4;
    }
}

static unsigned hex4(parser *p) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else fail(p, "bad \\u escape");
    }
    return v;
}

static jval parse_value(parser *p);

static char *parse_string(parser *p, size_t *out_len) {
    if (p->s[p->i] != '"') fail(p, "expected string");
    p->i++;
    size_t len = 0, cap = 16;
    char *buf = malloc(cap);
    for (;;) {
        unsigned char c = (unsigned char)p->s[p->i++];
        if (c == '"') break;
        if (c == 0) fail(p, "unterminated string");
        if (c != '\\') {
            if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
            buf[len++] = (char)c;
            continue;
        }
        char e = p->s[p->i++];
        unsigned cp;
        switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            cp = hex4(p);
            if (cp >= 0xD800 && cp <= 0xDBFF && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                size_t save = p->i;
                p->i += 2;
                unsigned lo = hex4(p);
                if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else p->i = save;
            }
            break;
        default: fail(p, "bad escape");
        }
        put_utf8(&buf, &len, &cap, cp);
    }
    buf[len] = '\0';
    *out_len = len;
    return buf;
}

static jval parse_value(parser *p) {
    jval v;
    memset(&v, 0, sizeof v);
    ws(p);
    char c = p->s[p->i];
    if (c == '"') {
        v.type = J_STR;
        v.str = parse_string(p, &v.len);
    } else if (c == '[' || c == '{') {
        int obj = c == '{';
        v.type = obj ? J_OBJ : J_ARR;
        p->i++;
        size_t cap = 8;
        v.items = malloc(cap * sizeof *v.items);
        if (obj) v.keys = malloc(cap * sizeof *v.keys);
        ws(p);
        if (p->s[p->i] == (obj ? '}' : ']')) {
            p->i++;
            return v;
        }
        for (;;) {
            if (v.len == cap) {
                cap *= 2;
                v.items = realloc(v.items, cap * sizeof *v.items);
                if (obj) v.keys = realloc(v.keys, cap * sizeof *v.keys);
            }
            if (obj) {
                ws(p);
                size_t kl;
                v.keys[v.len] = parse_string(p, &kl);
                ws(p);
                if (p->s[p->i++] != ':') fail(p, "expected ':'");
            }
            v.items[v.len++] = parse_value(p);
            ws(p);
            char d = p->s[p->i++];
            if (d == ',') continue;
            if (d == (obj ? '}' : ']')) break;
            fail(p, "expected ',' or close");
        }
    } else if (strncmp(p->s + p->i, "null", 4) == 0) {
        v.type = J_NULL;
        p->i += 4;
    } else if (strncmp(p->s + p->i, "true", 4) == 0) {
        v.type = J_BOOL;
        v.num = 1;
        p->i += 4;
    } else if (strncmp(p->s + p->i, "false", 5) == 0) {
        v.type = J_BOOL;
        p->i += 5;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        char *end;
        v.type = J_NUM;
        v.num = strtod(p->s + p->i, &end);
        p->i = (size_t)(end - p->s);
    } else {
        fail(p, "unexpected character");
    }
    return v;
}

jval json_parse(const char *text) {
    parser p = {text, 0};
    jval v = parse_value(&p);
    ws(&p);
    if (p.s[p.i] != '\0') fail(&p, "trailing data");
    return v;
}

const jval *json_get(const jval *obj, const char *key) {
    if (obj->type != J_OBJ) return NULL;
    for (size_t k = 0; k < obj->len; k++)
        if (strcmp(obj->keys[k], key) == 0) return &obj->items[k];
    return NULL;
}

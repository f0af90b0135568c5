/* A small JSON reader for the C SDK's tests (enough for sdk/vectors/checkpoint.json). */
#ifndef CS_TEST_JSON_H
#define CS_TEST_JSON_H

#include <stddef.h>

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    double num;         /* J_NUM, J_BOOL (0/1) */
    char *str;          /* J_STR: UTF-8 (surrogate escapes become WTF-8), len bytes */
    size_t len;         /* J_STR bytes; J_ARR/J_OBJ items */
    struct jval *items; /* J_ARR/J_OBJ */
    char **keys;        /* J_OBJ */
} jval;

/* Parse TEXT; exits the process with a message on malformed input. */
jval json_parse(const char *text);
/* Member KEY of an object, or NULL. */
const jval *json_get(const jval *obj, const char *key);

#endif

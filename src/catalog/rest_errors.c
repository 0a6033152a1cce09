/*
 * rest_errors.c - failures of the REST catalog as floe codes (SPEC.md
 * section 7.4): which HTTP statuses are conflicts, unknown outcomes,
 * authentication failures or refusals, and the message built from the
 * server's ErrorModel.
 *
 * It does not decide about retries (rest.c does) and never sees secrets:
 * messages carry the method, the URL path (no query string) and what the
 * server said.
 */
#include <stdio.h>

#include "catalog/rest_internal.h"

int floe__rest_status_code(long status, floe__rest_op op)
{
    switch (status) {
    case 401:
    case 403:
    case 419:                                   /* "authentication timeout" in the spec */
        return FLOE_EAUTH;
    case 404:
        return FLOE_ENOTFOUND;
    case 406:
    case 501:
        return FLOE_EUNSUPPORTED;
    case 409:
        return op == FLOE_REST_COMMIT   ? FLOE_ECONFLICT
               : op == FLOE_REST_CREATE ? FLOE_EEXISTS
                                        : FLOE_ECATALOG;
    case 408:
    case 429:
        return FLOE_ENET;
    default:
        break;
    }
    if (status >= 500 && status <= 599)
        return op == FLOE_REST_COMMIT ? FLOE_EUNKNOWN_OUTCOME : FLOE_ENET;
    return FLOE_ECATALOG;
}

static const char *reason(long status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 419: return "Authentication Timeout";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}

void floe__rest_excerpt(const void *body, size_t len, char *out, size_t cap)
{
    const unsigned char *p = body;
    size_t o = 0;
    if (cap == 0)
        return;
    for (size_t i = 0; i < len && o + 1 < cap; i++)
        out[o++] = (p[i] < 0x20 || p[i] == 0x7f) ? (p[i] == '\n' || p[i] == '\t' ? ' ' : '?')
                                                  : (char)p[i];
    out[o] = '\0';
    if (o + 1 >= cap && len > o && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

/* The ErrorModel's type and message, excerpted; false when the body is not
 * one. */
static bool error_model(const floe__buf *body, char *type, size_t tcap, char *msg, size_t mcap)
{
    if (!body || body->len == 0)
        return false;
    json_t *doc = json_loadb((const char *)body->data, body->len, 0, NULL);
    json_t *e = json_object_get(doc, "error");
    const char *m = json_string_value(json_object_get(e, "message"));
    const char *t = json_string_value(json_object_get(e, "type"));
    bool ok = json_is_object(e) && (m || t);
    if (ok) {
        floe__rest_excerpt(t ? t : "", t ? strlen(t) : 0, type, tcap);
        floe__rest_excerpt(m ? m : "", m ? strlen(m) : 0, msg, mcap);
    }
    json_decref(doc);
    return ok;
}

int floe__rest_error(floe_error *err, const char *method, const char *path, long status,
                     const floe__buf *body, floe__rest_op op)
{
    int code = floe__rest_status_code(status, op);
    char type[128], msg[600], what[128] = "";
    const char *r = reason(status);
    if (code == FLOE_EUNKNOWN_OUTCOME)
        snprintf(what, sizeof what, " (the commit may or may not have been applied)");
    else if (code == FLOE_ECONFLICT)
        snprintf(what, sizeof what, " (a requirement failed: the table changed)");
    if (error_model(body, type, sizeof type, msg, sizeof msg)) {
        floe__err_set(err, code, "%s %s: HTTP %ld%s%s%s: %s%s%s", method, path, status,
                      *r ? " " : "", r, what, type, *type && *msg ? ": " : "", msg);
    } else {
        char ex[200] = "";
        if (body && body->len)
            floe__rest_excerpt(body->data, body->len, ex, sizeof ex);
        floe__err_set(err, code, "%s %s: HTTP %ld%s%s%s%s%s", method, path, status,
                      *r ? " " : "", r, what, *ex ? ": " : "", ex);
    }
    return code;
}

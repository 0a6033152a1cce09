/*
 * pg_conn.c - a libpq connection to a Postgres server: queries, COPY out
 * and the logical replication stream.
 *
 * Connection strings (key=value or postgres:// URIs, or nothing: the PG*
 * environment variables) are handed to libpq as they are, with floe's
 * session settings appended to any `options` they carry
 * (FLOE__PG_SESSION_OPTIONS: the text formats pg_types.c reads).  They are
 * never printed: messages name the server by host, port, database and user
 * as libpq resolved them, and a string libpq cannot parse is reported
 * without its text (libpq's own message quotes it, password and all).
 *
 * Replication connections (replication=database) take only the simple
 * query protocol, so parameterless queries go through PQexec.  Server
 * errors become codes by SQLSTATE: insufficient privilege FLOE_EPERM,
 * undefined objects FLOE_ENOTFOUND, connection failures FLOE_ENET, the
 * rest FLOE_ESTATE; the message carries the server's text and SQLSTATE
 * (floe__pg_sqlstate gives it to callers that decide on it).
 */
#include <libpq-fe.h>
#include <stdio.h>

#include "source/pg_internal.h"

struct floe__pg_conn {
    PGconn *pg;
    char where[320];
    char sqlstate[6];
    char *copybuf;               /* the last COPY row or stream message (libpq's) */
};

struct floe__pg_result {
    PGresult *res;
};

/* ---- connecting ---------------------------------------------------------------------------- */

static void describe(PGconn *pg, char *out, size_t n)
{
    const char *host = PQhost(pg), *port = PQport(pg), *db = PQdb(pg), *user = PQuser(pg);
    snprintf(out, n, "host=%s port=%s dbname=%s user=%s", host && *host ? host : "(default)",
             port && *port ? port : "5432", db ? db : "", user ? user : "");
}

void floe__pg_conninfo_display(const char *conninfo, char *out, size_t n)
{
    char *msg = NULL;
    PQconninfoOption *o = PQconninfoParse(conninfo ? conninfo : "", &msg);
    PQfreemem(msg);
    if (!o) {
        snprintf(out, n, "(a malformed connection string)");
        return;
    }
    const char *host = NULL, *port = NULL, *db = NULL, *user = NULL;
    for (PQconninfoOption *p = o; p->keyword; p++) {
        if (!p->val)
            continue;
        if (strcmp(p->keyword, "host") == 0 || (strcmp(p->keyword, "hostaddr") == 0 && !host))
            host = p->val;
        else if (strcmp(p->keyword, "port") == 0)
            port = p->val;
        else if (strcmp(p->keyword, "dbname") == 0)
            db = p->val;
        else if (strcmp(p->keyword, "user") == 0)
            user = p->val;
    }
    snprintf(out, n, "host=%s port=%s dbname=%s user=%s", host ? host : "(default)",
             port ? port : "(default)", db ? db : "(default)", user ? user : "(default)");
    PQconninfoFree(o);
}

/* The `options` the connection string carries, with floe's appended. */
static int session_options(const char *conninfo, floe__buf *out, floe_error *err)
{
    char *msg = NULL;
    PQconninfoOption *o = PQconninfoParse(conninfo ? conninfo : "", &msg);
    PQfreemem(msg);
    if (!o)
        return floe__err_set(err, FLOE_EINVAL, "malformed Postgres connection string (not "
                             "shown: it may hold a password)");
    int rc = FLOE_OK;
    for (PQconninfoOption *p = o; p->keyword; p++)
        if (strcmp(p->keyword, "options") == 0 && p->val && *p->val)
            rc = floe__buf_printf(out, err, "%s ", p->val);
    PQconninfoFree(o);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(out, err, "%s -c standard_conforming_strings=on",
                              FLOE__PG_SESSION_OPTIONS);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(out, 0, err);
    return rc;
}

static int connect_error(PGconn *pg, const char *where, floe_error *err)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", pg ? PQerrorMessage(pg) : "out of memory");
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    for (char *p = msg; *p; p++)              /* libpq's lines, as one */
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    int code = strstr(msg, "authentication failed") || strstr(msg, "no password supplied")
                   ? FLOE_EAUTH
               : strstr(msg, "must be superuser or replication role") ||
                       strstr(msg, "permission denied") || strstr(msg, "no pg_hba.conf entry")
                   ? FLOE_EPERM
               : strstr(msg, "does not exist") ? FLOE_ENOTFOUND : FLOE_ENET;
    return floe__err_set(err, code, "cannot connect to Postgres (%s): %s", where, msg);
}

int floe__pg_connect(const char *conninfo, bool replication, floe__pg_conn **out,
                     floe_error *err)
{
    floe__buf opts;
    floe__buf_init(&opts, 1 << 16);
    FLOE_FORWARD(session_options(conninfo, &opts, err));
    const char *kw[6], *val[6];
    int i = 0;
    if (conninfo && *conninfo) {
        kw[i] = "dbname";
        val[i++] = conninfo;
    }
    kw[i] = "options";
    val[i++] = (const char *)opts.data;
    kw[i] = "client_encoding";
    val[i++] = "UTF8";
    kw[i] = "fallback_application_name";
    val[i++] = "floe";
    if (replication) {
        kw[i] = "replication";
        val[i++] = "database";
    }
    kw[i] = NULL;
    val[i] = NULL;
    PGconn *pg = PQconnectdbParams(kw, val, 1);
    floe__buf_free(&opts);
    floe__pg_conn *c = floe__calloc(1, sizeof *c);
    if (!c || !pg || PQstatus(pg) != CONNECTION_OK) {
        char where[320];
        if (pg)
            describe(pg, where, sizeof where);
        else
            floe__pg_conninfo_display(conninfo, where, sizeof where);
        int rc = c ? connect_error(pg, where, err) : FLOE_OOM(err);
        PQfinish(pg);
        floe__free(c);
        return rc;
    }
    c->pg = pg;
    describe(pg, c->where, sizeof c->where);
    *out = c;
    return FLOE_OK;
}

void floe__pg_close(floe__pg_conn *c)
{
    if (!c)
        return;
    PQfreemem(c->copybuf);
    PQfinish(c->pg);
    floe__free(c);
}

const char *floe__pg_where(const floe__pg_conn *c) { return c->where; }
int floe__pg_server_version(const floe__pg_conn *c) { return PQserverVersion(c->pg); }
const char *floe__pg_sqlstate(const floe__pg_conn *c) { return c->sqlstate; }
int floe__pg_socket(const floe__pg_conn *c) { return PQsocket(c->pg); }

/* ---- queries ----------------------------------------------------------------------------- */

static int code_of(const char *state, PGconn *pg)
{
    if (PQstatus(pg) == CONNECTION_BAD || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0)
        return FLOE_ENET;
    if (strcmp(state, "42501") == 0)
        return FLOE_EPERM;
    if (strcmp(state, "42704") == 0 || strcmp(state, "42P01") == 0 ||
        strcmp(state, "3D000") == 0 || strcmp(state, "42883") == 0)
        return FLOE_ENOTFOUND;
    return FLOE_ESTATE;
}

/* A failed result (or none): the server's message, detail and hint. */
static int result_error(floe__pg_conn *c, PGresult *res, floe_error *err)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
    const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
    snprintf(c->sqlstate, sizeof c->sqlstate, "%s", state ? state : "");
    char text[1024];
    snprintf(text, sizeof text, "%s", msg ? msg : PQerrorMessage(c->pg));
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n')
        text[--n] = '\0';
    return floe__err_set(err, code_of(c->sqlstate, c->pg), "%s%s%s%s%s (SQLSTATE %s)", text,
                         detail ? "; " : "", detail ? detail : "", hint ? "; hint: " : "",
                         hint ? hint : "", state ? state : "none");
}

int floe__pg_query(floe__pg_conn *c, const char *sql, const char *const *params, int n,
                   floe__pg_result **out, floe_error *err)
{
    c->sqlstate[0] = '\0';
    PGresult *res = n ? PQexecParams(c->pg, sql, n, NULL, params, NULL, NULL, 0)
                      : PQexec(c->pg, sql);
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        int rc = result_error(c, res, err);
        PQclear(res);
        return rc;
    }
    floe__pg_result *r = out ? floe__malloc(sizeof *r) : NULL;
    if (!out || !r) {
        PQclear(res);
        return out ? FLOE_OOM(err) : FLOE_OK;
    }
    r->res = res;
    *out = r;
    return FLOE_OK;
}

int floe__pg_exec(floe__pg_conn *c, const char *sql, floe_error *err)
{
    return floe__pg_query(c, sql, NULL, 0, NULL, err);
}

size_t floe__pg_rows(const floe__pg_result *r) { return (size_t)PQntuples(r->res); }

const char *floe__pg_get(const floe__pg_result *r, size_t row, int col)
{
    if (row >= (size_t)PQntuples(r->res) || col >= PQnfields(r->res) ||
        PQgetisnull(r->res, (int)row, col))
        return NULL;
    return PQgetvalue(r->res, (int)row, col);
}

void floe__pg_result_free(floe__pg_result *r)
{
    if (!r)
        return;
    PQclear(r->res);
    floe__free(r);
}

static int quote(const char *s, char q, floe__buf *b, floe_error *err)
{
    FLOE_FORWARD(floe__buf_putc(b, (uint8_t)q, err));
    for (; *s; s++) {
        if (*s == q)
            FLOE_FORWARD(floe__buf_putc(b, (uint8_t)q, err));
        FLOE_FORWARD(floe__buf_putc(b, (uint8_t)*s, err));
    }
    return floe__buf_putc(b, (uint8_t)q, err);
}

int floe__pg_quote_ident(const char *s, floe__buf *b, floe_error *err)
{
    return quote(s, '"', b, err);
}

int floe__pg_quote_literal(const char *s, floe__buf *b, floe_error *err)
{
    return quote(s, '\'', b, err);
}

/* ---- COPY out and the stream --------------------------------------------------------------- */

static int enter_copy(floe__pg_conn *c, const char *sql, ExecStatusType want, floe_error *err)
{
    c->sqlstate[0] = '\0';
    PGresult *res = PQexec(c->pg, sql);
    int rc = FLOE_OK;
    if (!res || PQresultStatus(res) != want)
        rc = result_error(c, res, err);
    PQclear(res);
    return rc;
}

int floe__pg_copy_begin(floe__pg_conn *c, const char *sql, floe_error *err)
{
    return enter_copy(c, sql, PGRES_COPY_OUT, err);
}

/* The end of a COPY or a stream: the command's own result. */
static int copy_end(floe__pg_conn *c, const char *what, floe_error *err)
{
    int rc = FLOE_OK;
    PGresult *res;
    while ((res = PQgetResult(c->pg)) != NULL) {
        if (rc == FLOE_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
            rc = result_error(c, res, err);
        PQclear(res);
    }
    if (rc == FLOE_OK && PQstatus(c->pg) == CONNECTION_BAD)
        rc = floe__err_set(err, FLOE_ENET, "%s: %s", what, PQerrorMessage(c->pg));
    return rc;
}

int floe__pg_copy_next(floe__pg_conn *c, const char **line, size_t *len, int *got,
                       floe_error *err)
{
    PQfreemem(c->copybuf);
    c->copybuf = NULL;
    int n = PQgetCopyData(c->pg, &c->copybuf, 0);
    if (n > 0) {
        *line = c->copybuf;
        *len = (size_t)n - (c->copybuf[n - 1] == '\n');
        *got = 1;
        return FLOE_OK;
    }
    *got = 0;
    if (n == -1)
        return copy_end(c, "COPY", err);
    return floe__err_set(err, FLOE_ENET, "COPY: %s", PQerrorMessage(c->pg));
}

int floe__pg_stream_begin(floe__pg_conn *c, const char *sql, floe_error *err)
{
    return enter_copy(c, sql, PGRES_COPY_BOTH, err);
}

int floe__pg_stream_next(floe__pg_conn *c, const uint8_t **msg, size_t *len, int *got,
                         floe_error *err)
{
    PQfreemem(c->copybuf);
    c->copybuf = NULL;
    *got = 0;
    int n = PQgetCopyData(c->pg, &c->copybuf, 1);
    if (n == 0) {
        if (!PQconsumeInput(c->pg))
            return floe__err_set(err, FLOE_ENET, "the replication connection broke: %s",
                                 PQerrorMessage(c->pg));
        n = PQgetCopyData(c->pg, &c->copybuf, 1);
    }
    if (n > 0) {
        *msg = (const uint8_t *)c->copybuf;
        *len = (size_t)n;
        *got = 1;
        return FLOE_OK;
    }
    if (n == 0)
        return FLOE_OK;
    if (n == -1) {
        int rc = copy_end(c, "the replication stream", err);
        return rc != FLOE_OK ? floe__err_wrap(err, rc, "the server ended the replication stream")
                             : floe__err_set(err, FLOE_ENET, "the server ended the replication "
                                             "stream");
    }
    return floe__err_set(err, FLOE_ENET, "the replication stream broke: %s",
                         PQerrorMessage(c->pg));
}

int floe__pg_stream_send(floe__pg_conn *c, const uint8_t *msg, size_t len, floe_error *err)
{
    if (PQputCopyData(c->pg, (const char *)msg, (int)len) != 1 || PQflush(c->pg) != 0)
        return floe__err_set(err, FLOE_ENET, "cannot send to the server: %s",
                             PQerrorMessage(c->pg));
    return FLOE_OK;
}

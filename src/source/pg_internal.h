/*
 * pg_internal.h - the Postgres source: what floe reads from a Postgres
 * server and how it turns it into rows.
 *
 *   pg_lsn.c     LSNs as text ("16/B374D848") and the replication protocol's
 *                clock (microseconds since 2000-01-01)
 *   pgoutput.c   the logical replication stream: the CopyData envelope
 *                (XLogData, keepalive, standby status update) and the
 *                pgoutput plugin's messages (protocol versions 1 and 2:
 *                streamed transactions), decoded in place; pure functions
 *                over bytes (fuzz/fuzz_pgoutput.c)
 *   pg_copy.c    COPY ... TO STDOUT text format: one line into its fields
 *   pg_types.c   Postgres types -> floe column declarations (SPEC 3), and
 *                Postgres text values -> slots of floe's row format
 *   pg_conn.c    a libpq connection: queries, COPY out, the replication
 *                stream; connection strings are never shown with secrets
 *
 * What is not here: which tables, slots and publications to use, the
 * initial copy, transactions and frontiers (src/mirror/).  Every decoder
 * reads only inside [p, p+n) and says what was wrong with FLOE_EINPUT;
 * nothing here allocates per value.
 */
#ifndef FLOE_PG_INTERNAL_H
#define FLOE_PG_INTERNAL_H

#include "schema/schema_internal.h"

/* ---- LSNs and clocks (pg_lsn.c) ---------------------------------------------- */

/* "X/Y" (upper and lower 32 bits in hex, as Postgres prints them) into out
 * (at least 18 bytes). */
void floe__lsn_format(uint64_t lsn, char *out, size_t n);
/* Parses "X/Y"; -1 when malformed. */
int floe__lsn_parse(const char *s, uint64_t *out);
/* The replication protocol's timestamps: microseconds since
 * 2000-01-01 00:00:00 UTC, from and to Unix microseconds. */
#define FLOE__PG_EPOCH_UNIX_US INT64_C(946684800000000)
int64_t floe__pg_now_us(void);            /* wall clock, protocol time */

/* ---- the replication stream (pgoutput.c) ------------------------------------------
 * Big-endian integers, NUL-terminated strings, as the Postgres protocol
 * documentation ("Streaming Replication Protocol", "Logical Replication
 * Message Formats") describes them. */

/* One CopyData message of the walsender. */
typedef struct floe__pg_copymsg {
    char kind;                     /* 'w' XLogData, 'k' primary keepalive */
    uint64_t wal_start;            /* w: the WAL position of the data */
    uint64_t wal_end;              /* the server's WAL end (w, k) */
    int64_t send_time;             /* protocol time */
    bool reply_requested;          /* k */
    const uint8_t *data;           /* w: the pgoutput message (points into the input) */
    size_t len;
} floe__pg_copymsg;

int floe__pg_copymsg_decode(const uint8_t *p, size_t n, floe__pg_copymsg *out, floe_error *err);
/* A standby status update ('r'): write, flush and apply positions and the
 * client's clock, 34 bytes into out. */
#define FLOE__PG_STATUS_LEN 34
void floe__pg_status_encode(uint64_t write, uint64_t flush, uint64_t apply, int64_t now,
                            bool reply, uint8_t out[FLOE__PG_STATUS_LEN]);

/* One column value of a TupleData. */
typedef struct floe__pgo_value {
    char kind;                     /* 'n' null, 'u' unchanged TOASTed, 't' text, 'b' binary */
    const char *data;              /* t, b: the value (not NUL-terminated) */
    uint32_t len;
} floe__pgo_value;

typedef struct floe__pgo_tuple {
    uint16_t n;
    const floe__pgo_value *vals;   /* n values (owned by the decoder) */
} floe__pgo_tuple;

/* A column of a Relation message. */
typedef struct floe__pgo_column {
    bool key;                      /* part of the replica identity */
    const char *name;              /* NUL-terminated, in the message */
    uint32_t type;                 /* pg_type oid */
    int32_t typmod;
} floe__pgo_column;

typedef struct floe__pgo_msg {
    char kind;            /* B C O R Y I U D T M; protocol 2: S E c A */
    uint64_t lsn;         /* B: final (commit) LSN; C, c: commit LSN; O: origin LSN; M: message
                             LSN */
    uint64_t end_lsn;     /* C, c: the end of the commit record */
    int64_t time;         /* B, C, c: commit time (protocol time) */
    uint32_t xid;         /* B; S, c, A: the top-level transaction; R Y I U D T M inside a
                             stream block: the (sub)transaction that made it */
    uint32_t subxid;      /* A: the (sub)transaction aborted (xid: the whole transaction) */
    bool streamed;        /* R Y I U D T M inside a stream block (xid read) */
    uint8_t flags;        /* C, M, c; T: options (1 CASCADE, 2 RESTART IDENTITY); S: 1 for
                             the transaction's first stream segment */
    uint32_t relid;       /* R, Y (type oid), I, U, D */
    const char *nspname;  /* R, Y */
    const char *relname;  /* R, Y; O: origin name; M: prefix */
    uint8_t replident;    /* R: 'd' default, 'n' nothing, 'f' full, 'i' index */
    uint16_t ncols;       /* R */
    const floe__pgo_column *cols;
    char old_kind;        /* U, D: 'K' key, 'O' old row, 0 none (U without old tuple) */
    floe__pgo_tuple old_tuple, new_tuple;   /* new: I, U */
    uint32_t nrels;       /* T */
    const uint8_t *relids;          /* T: nrels big-endian u32 (read with floe__pgo_relid) */
    const uint8_t *content;         /* M */
    uint32_t content_len;
} floe__pgo_msg;

/* Holds the arrays a decoded message points to (columns, values), reused
 * from message to message.  floe__pgo_decoder_init / _free. */
typedef struct floe__pgo_decoder {
    floe__pgo_value *vals;
    size_t cap_vals;
    floe__pgo_column *cols;
    size_t cap_cols;
    bool in_stream;                /* between a Stream Start and its Stream Stop */
} floe__pgo_decoder;

void floe__pgo_decoder_init(floe__pgo_decoder *d);
void floe__pgo_decoder_free(floe__pgo_decoder *d);
/* Decode one pgoutput message (protocol versions 1 and 2; 'M' logical
 * messages too).  The result points into [p, p+n) and into d: valid until
 * the next decode.  d remembers whether a stream block is open (Stream
 * Start .. Stop): the messages inside carry an xid.  FLOE_EINPUT with the
 * reason for anything malformed, truncated, or of an unknown kind. */
int floe__pgo_decode(floe__pgo_decoder *d, const uint8_t *p, size_t n, floe__pgo_msg *out,
                     floe_error *err);
uint32_t floe__pgo_relid(const floe__pgo_msg *m, uint32_t i);

/* ---- COPY text format (pg_copy.c) --------------------------------------------------- */

/* A field of a COPY line: its text (backslash escapes decoded) or NULL (\N). */
typedef struct floe__pg_field {
    const char *s;
    uint32_t len;
    bool null;
} floe__pg_field;

/* Split one COPY text line [p, p+n) (without its newline) into exactly
 * `ncols` tab-separated fields.  A field without escapes points into the
 * line; decoded ones into `scratch` (reset here; it must not move while the
 * fields are used, so it is reserved to n up front).  FLOE_EINPUT for a
 * wrong field count or a bad escape. */
int floe__pg_copy_split(const char *p, size_t n, size_t ncols, floe__buf *scratch,
                        floe__pg_field *fields, floe_error *err);

/* ---- types and values (pg_types.c) ----------------------------------------------------
 * How one Postgres column becomes a floe column: a converter picked from
 * the column's type (domains resolved to their base type, enums and types
 * floe does not know as text), and the value text read into the row. */
typedef enum floe__pg_conv {
    FLOE__PGC_TEXT = 0,      /* text, varchar, enums, everything floe does not know: the text */
    FLOE__PGC_BOOL,
    FLOE__PGC_INT2,
    FLOE__PGC_INT4,
    FLOE__PGC_INT8,
    FLOE__PGC_OID,           /* uint4 -> long */
    FLOE__PGC_FLOAT4,
    FLOE__PGC_FLOAT8,
    FLOE__PGC_NUMERIC,       /* numeric(p,s) -> decimal(p,s) */
    FLOE__PGC_JSONB,         /* json, jsonb: compact JSON text */
    FLOE__PGC_INTERVAL,      /* text in IntervalStyle iso_8601 */
    FLOE__PGC_UUID,
    FLOE__PGC_BYTEA,         /* hex output */
    FLOE__PGC_DATE,
    FLOE__PGC_TIME,
    FLOE__PGC_TIMESTAMP,
    FLOE__PGC_TIMESTAMPTZ,
    FLOE__PGC_ARRAY,         /* one-dimensional T[] -> list<T> */
    FLOE__PGC_RANGE,         /* range of T -> struct{lower, upper, *_inclusive, empty} */
} floe__pg_conv;

typedef struct floe__pg_type {
    floe__pg_conv conv;
    floe__pg_conv elem;      /* ARRAY, RANGE: the element's converter (a scalar) */
    int32_t precision, scale;   /* NUMERIC (of the element for ARRAY, RANGE) */
    char name[64];           /* the Postgres type as the catalog names it, for messages */
} floe__pg_type;

/* The converter of a built-in scalar type oid with typmod (-1: none);
 * unknown oids and enums read as text. */
void floe__pg_scalar_type(uint32_t oid, int32_t typmod, floe__pg_type *out);
/* Wrap a scalar converter as T[] or as a range of T. */
void floe__pg_array_of(floe__pg_type *t);
void floe__pg_range_of(floe__pg_type *t);
/* The column declaration of SPEC 3 for t ("bigint", "numeric(12,2)",
 * "text[]", "range<date>"), into out. */
void floe__pg_type_decl(const floe__pg_type *t, char *out, size_t n);
/* Whether a value of a column can be stored out of line (TOAST): a
 * variable-length type whose storage is not plain, unless its type
 * modifier bounds its values to what Postgres never moves out of line
 * (numeric(p,s) with p <= 32, varchar(n) and char(n) with n <= 5).
 * `storage` is pg_attribute.attstorage, `typlen` pg_type.typlen, `oid`
 * and `typmod` the column's atttypid and atttypmod. */
bool floe__pg_toastable(char storage, int typlen, uint32_t oid, int32_t typmod);

/* Append the slot (present) of field f read from the Postgres text value
 * [s, s+n) by t; `scratch` holds decoded quoted parts of arrays and ranges.
 * FLOE_EINPUT naming the type and value when it does not read (NaN in a
 * decimal, infinite dates, BC dates, multi-dimensional arrays, bad
 * syntax); nothing is appended then. */
int floe__pg_value_put(const floe__pg_type *t, const floe__field *f, const char *s, size_t n,
                       floe__buf *out, floe__buf *scratch, floe_error *err);

/* ---- connections (pg_conn.c) ---------------------------------------------------------- */
typedef struct floe__pg_conn floe__pg_conn;
typedef struct floe__pg_result floe__pg_result;

/* The session settings floe's value parsers rely on, set at every
 * connection (client_encoding UTF8, DateStyle ISO, IntervalStyle iso_8601,
 * TimeZone UTC, extra_float_digits 3, bytea_output hex). */
#define FLOE__PG_SESSION_OPTIONS \
    "-c datestyle=ISO,YMD -c intervalstyle=iso_8601 -c timezone=UTC " \
    "-c extra_float_digits=3 -c bytea_output=hex"

/* Connect with a libpq connection string or URI (NULL or "": the PG*
 * environment variables alone).  replication: a walsender connection
 * (replication=database) for slot commands and the change stream.  Errors:
 * FLOE_EINVAL for a malformed string (never shown: it may hold a
 * password), FLOE_EAUTH for refused credentials, FLOE_ENET otherwise; the
 * message names the server without secrets. */
int floe__pg_connect(const char *conninfo, bool replication, floe__pg_conn **out,
                     floe_error *err);
void floe__pg_close(floe__pg_conn *c);              /* accepts NULL */
/* "host=... port=... dbname=... user=..." of the connection (no password). */
const char *floe__pg_where(const floe__pg_conn *c);
int floe__pg_server_version(const floe__pg_conn *c);   /* 150004 */
/* The same, for a connection string that was not used yet (for messages). */
void floe__pg_conninfo_display(const char *conninfo, char *out, size_t n);

/* A query with text parameters ($1...; params may be NULL when n is 0),
 * results as text.  Errors: FLOE_EPERM (insufficient privilege),
 * FLOE_ENOTFOUND (undefined object), FLOE_ENET (connection lost),
 * FLOE_ESTATE otherwise, with the server's message and SQLSTATE. */
int floe__pg_query(floe__pg_conn *c, const char *sql, const char *const *params, int n,
                   floe__pg_result **out, floe_error *err);
/* A command whose result rows (if any) are not needed. */
int floe__pg_exec(floe__pg_conn *c, const char *sql, floe_error *err);
/* The SQLSTATE of the connection's last failed query ("" when none). */
const char *floe__pg_sqlstate(const floe__pg_conn *c);
size_t floe__pg_rows(const floe__pg_result *r);
/* The value at (row, col), NULL for SQL NULL. */
const char *floe__pg_get(const floe__pg_result *r, size_t row, int col);
void floe__pg_result_free(floe__pg_result *r);     /* accepts NULL */
/* An identifier or a string literal quoted for SQL into b. */
int floe__pg_quote_ident(const char *s, floe__buf *b, floe_error *err);
int floe__pg_quote_literal(const char *s, floe__buf *b, floe_error *err);

/* COPY ... TO STDOUT: start it, then read line by line: *got 1 with the
 * line (without its newline; valid until the next call), 0 at the end. */
int floe__pg_copy_begin(floe__pg_conn *c, const char *sql, floe_error *err);
int floe__pg_copy_next(floe__pg_conn *c, const char **line, size_t *len, int *got,
                       floe_error *err);

/* START_REPLICATION (or any command that enters COPY BOTH mode). */
int floe__pg_stream_begin(floe__pg_conn *c, const char *sql, floe_error *err);
/* The next CopyData message of the stream without waiting: *got 1 and
 * *msg set (valid until the next call), 0 when none is buffered, or
 * FLOE_ENET when the stream or the connection ended. */
int floe__pg_stream_next(floe__pg_conn *c, const uint8_t **msg, size_t *len, int *got,
                         floe_error *err);
/* Send one CopyData message to the server and flush. */
int floe__pg_stream_send(floe__pg_conn *c, const uint8_t *msg, size_t len, floe_error *err);
/* The connection's socket, for poll(). */
int floe__pg_socket(const floe__pg_conn *c);

#endif /* FLOE_PG_INTERNAL_H */

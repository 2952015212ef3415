/* metrics.c - what `hiera serve` counts (serve.h): requests by endpoint and status code, lookups by
 * outcome, a latency histogram, and its rendering in Prometheus' text format with the snapshot's
 * age and generation and the reloads. Counters are atomics: any server thread adds to them. */
#include "serve/serve.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"

static const char *const ENDPOINTS[] = {"healthz", "metrics", "lookup", "batch", "keys", "hierarchy", "node",
                                        "nodes", "facts", "environments", "check", "page", "other"};
#define NENDPOINTS (sizeof ENDPOINTS / sizeof *ENDPOINTS)
static const int CODES[] = {200, 400, 401, 403, 404, 405, 413, 422, 500, 503};
#define NCODES (sizeof CODES / sizeof *CODES)
static const double BUCKETS[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
#define NBUCKETS (sizeof BUCKETS / sizeof *BUCKETS)

static uint64_t requests[NENDPOINTS][NCODES + 1]; /* the last column: other codes */
static uint64_t latency[NBUCKETS + 1];            /* cumulative at render time; the last: +Inf */
static uint64_t latency_ns_sum, latency_count;
static uint64_t lookups[3];
static time_t started;

void metrics_start(void) { started = time(NULL); }

void metrics_lookup(int outcome)
{
    if (outcome >= 0 && outcome < 3)
        __atomic_add_fetch(&lookups[outcome], 1, __ATOMIC_RELAXED);
}

void metrics_request(const char *endpoint, int status, double seconds)
{
    size_t e = NENDPOINTS - 1, c = NCODES;
    for (size_t i = 0; i < NENDPOINTS; i++)
        if (strcmp(ENDPOINTS[i], endpoint) == 0)
            e = i;
    for (size_t i = 0; i < NCODES; i++)
        if (CODES[i] == status)
            c = i;
    __atomic_add_fetch(&requests[e][c], 1, __ATOMIC_RELAXED);
    size_t b = NBUCKETS;
    for (size_t i = 0; i < NBUCKETS; i++)
        if (seconds <= BUCKETS[i]) {
            b = i;
            break;
        }
    __atomic_add_fetch(&latency[b], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&latency_ns_sum, (uint64_t)(seconds * 1e9), __ATOMIC_RELAXED);
    __atomic_add_fetch(&latency_count, 1, __ATOMIC_RELAXED);
}

char *metrics_render(serve_state *st, size_t *len)
{
    sbuf b = {0};
    sb_adds(&b, "# HELP hiera_http_requests_total HTTP requests answered, by endpoint and status code.\n"
                "# TYPE hiera_http_requests_total counter\n");
    for (size_t e = 0; e < NENDPOINTS; e++)
        for (size_t c = 0; c <= NCODES; c++) {
            uint64_t n = __atomic_load_n(&requests[e][c], __ATOMIC_RELAXED);
            if (!n)
                continue;
            if (c < NCODES)
                sb_addf(&b, "hiera_http_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n", ENDPOINTS[e], CODES[c],
                        (unsigned long long)n);
            else
                sb_addf(&b, "hiera_http_requests_total{endpoint=\"%s\",code=\"other\"} %llu\n", ENDPOINTS[e],
                        (unsigned long long)n);
        }
    sb_adds(&b, "# HELP hiera_lookups_total Lookups made, by outcome.\n# TYPE hiera_lookups_total counter\n");
    static const char *outcomes[] = {"found", "not_found", "error"};
    for (int i = 0; i < 3; i++)
        sb_addf(&b, "hiera_lookups_total{outcome=\"%s\"} %llu\n", outcomes[i],
                (unsigned long long)__atomic_load_n(&lookups[i], __ATOMIC_RELAXED));
    sb_adds(&b, "# HELP hiera_http_request_duration_seconds Time to answer a request.\n"
                "# TYPE hiera_http_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t i = 0; i <= NBUCKETS; i++) {
        cum += __atomic_load_n(&latency[i], __ATOMIC_RELAXED);
        if (i < NBUCKETS)
            sb_addf(&b, "hiera_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n", BUCKETS[i], (unsigned long long)cum);
        else
            sb_addf(&b, "hiera_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    sb_addf(&b, "hiera_http_request_duration_seconds_sum %.9f\n",
            (double)__atomic_load_n(&latency_ns_sum, __ATOMIC_RELAXED) / 1e9);
    sb_addf(&b, "hiera_http_request_duration_seconds_count %llu\n",
            (unsigned long long)__atomic_load_n(&latency_count, __ATOMIC_RELAXED));
    generation *g = state_current(st);
    sb_addf(&b, "# HELP hiera_snapshot_age_seconds Seconds since the served snapshot was built.\n"
                "# TYPE hiera_snapshot_age_seconds gauge\nhiera_snapshot_age_seconds %lld\n",
            (long long)(time(NULL) - g->built));
    sb_addf(&b, "# HELP hiera_snapshot_generation The served snapshot's number (1 at start).\n"
                "# TYPE hiera_snapshot_generation gauge\nhiera_snapshot_generation %llu\n",
            (unsigned long long)g->id);
    sb_addf(&b, "# HELP hiera_snapshot_build_seconds Time the served snapshot took to build.\n"
                "# TYPE hiera_snapshot_build_seconds gauge\nhiera_snapshot_build_seconds %.6f\n",
            g->build_seconds);
    sb_addf(&b, "# HELP hiera_snapshot_built_timestamp_seconds When the served generation was published (Unix time).\n"
                "# TYPE hiera_snapshot_built_timestamp_seconds gauge\nhiera_snapshot_built_timestamp_seconds %lld\n",
            (long long)g->built);
    sb_addf(&b, "# HELP hiera_nodes Nodes with facts.\n# TYPE hiera_nodes gauge\nhiera_nodes %zu\n", hv_array_len(g->nodes));
    generation_release(g);
    state_status ss;
    state_status_of(st, &ss);
    sb_addf(&b, "# HELP hiera_pending_changes Changes seen under the code directory or the facts folder and not served yet.\n"
                "# TYPE hiera_pending_changes gauge\nhiera_pending_changes %zu\n"
                "# HELP hiera_pending_seconds How long the oldest change not served yet has waited.\n"
                "# TYPE hiera_pending_seconds gauge\nhiera_pending_seconds %.3f\n",
            ss.pending, ss.pending_seconds);
    sb_addf(&b, "# HELP hiera_degraded 1 when a reload was refused: the files on disk have errors the served builds have not.\n"
                "# TYPE hiera_degraded gauge\nhiera_degraded %d\n",
            ss.refused ? 1 : 0);
    sb_addf(&b, "# HELP hiera_environments Environments: listed (folders of the environmentpath), built (in memory).\n"
                "# TYPE hiera_environments gauge\nhiera_environments{state=\"listed\"} %zu\nhiera_environments{state=\"built\"} %zu\n",
            ss.envs_listed, ss.envs_built);
    sb_addf(&b, "# HELP hiera_parses Parsed data files held (each distinct content once).\n"
                "# TYPE hiera_parses gauge\nhiera_parses %zu\n"
                "# HELP hiera_memory_bytes Memory held by the environments, estimated: parses (shared by content), the environments' own tables.\n"
                "# TYPE hiera_memory_bytes gauge\nhiera_memory_bytes{part=\"parses\"} %zu\nhiera_memory_bytes{part=\"environments\"} %zu\n",
            ss.parses, ss.parse_bytes, ss.env_bytes);
    sb_addf(&b, "# HELP hiera_environment_builds_total Builds of an environment (first builds, rebuilds, builds after being dropped).\n"
                "# TYPE hiera_environment_builds_total counter\nhiera_environment_builds_total %llu\n"
                "# HELP hiera_environment_evictions_total Environments dropped from memory (--max-memory).\n"
                "# TYPE hiera_environment_evictions_total counter\nhiera_environment_evictions_total %llu\n",
            (unsigned long long)__atomic_load_n(&st->builds, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&st->evictions, __ATOMIC_RELAXED));
    free(ss.refused);
    sb_addf(&b, "# HELP hiera_reloads_total Reloads, by result (refused: the new files brought errors).\n"
                "# TYPE hiera_reloads_total counter\nhiera_reloads_total{result=\"ok\"} %llu\n"
                "hiera_reloads_total{result=\"refused\"} %llu\n",
            (unsigned long long)__atomic_load_n(&st->reloads_ok, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&st->reloads_refused, __ATOMIC_RELAXED));
    sb_addf(&b, "# HELP hiera_uptime_seconds Seconds since the server started.\n"
                "# TYPE hiera_uptime_seconds gauge\nhiera_uptime_seconds %lld\n",
            (long long)(time(NULL) - started));
    *len = b.len;
    return sb_take(&b);
}


/*
 * api_about.h - GET /v1: what this server is and what it fits.
 *
 * The answer names the server and its version, lists core's algorithms
 * and kernels, and describes what each can do ("capabilities"): every
 * algorithm's params (from core's params rows: type, default, range,
 * choices, which solver they apply with), what its y is, its solvers and
 * the kernels each takes, its outputs, whether it runs distributed and
 * under a search; every kernel's params; every output with its route,
 * its "output" choice, its Open Inference Protocol name and datatype and
 * the algorithms that offer it. Every fact is derived from the table
 * that owns it (core's params rows, core's descriptors and answer table),
 * so the web console, kmctl and the Python client take their lists from
 * here instead of writing their own (docs/api.md, GET /v1).
 *
 * Thread-safety: the answer is built once (it is constant for a build),
 * on first use under a mutex; api_about is reentrant.
 */
#ifndef API_ABOUT_H
#define API_ABOUT_H

#include "api_error.h"
#include "api_text.h"

/* Appends the answer's JSON text to out (api_text: check out->failed);
 * -1 and a 500 in e when it could not be built (out of memory). */
int api_about(api_text *out, api_error *e);

#endif

/*
 * km_model_internal.h - what core's rooms share of model/ and the public
 * headers hide: info lists, the algorithm descriptor km_algo (and an
 * extern for each, generated from KM_ALGO_MAP: km_algo.c's registry is
 * the one file of model/ that names the algorithms' symbols), the model's
 * internals, its preprocessing statistics, and the fit frame every fit
 * begins and ends with (km_model.c, km_algo.c, km_caps.c, km_info.c,
 * km_pre_stats.c, km_predict.c, km_fit.c, km_request.c).
 *
 * Not installed; never included outside core/ (and its tests). Includes
 * the internal header of kernels/ (and through it base's), nothing of a
 * room above. Thread-safety as km.h.
 */
#ifndef KM_MODEL_INTERNAL_H
#define KM_MODEL_INTERNAL_H

#include "../kernels/km_kernel_internal.h"
#include "km_model.h"

/* Most classes a classifier of ns training rows can have: each class has
 * at least one row. */
static inline uint64_t km_max_classes(uint64_t ns)
{
    return ns < KM_MODEL_MAX_CLASSES ? ns : KM_MODEL_MAX_CLASSES;
}

/* ------------------------------------------------------- info lists */

void km_info_cleanup(km_info *info);
/* Appends (copies values). When some value is not a finite value of its
 * kind (a whole number for integers, 0 or 1 for booleans), the entry is
 * added without values (count 0): the figure is absent, as km_info_write
 * stores it. Returns KM_ENOMEM on failure. */
km_status km_info_add(km_info *info, const char *key, km_info_kind kind,
                      int is_array, const double *values, size_t count);
km_status km_info_add1(km_info *info, const char *key, km_info_kind kind,
                       double value);
/* Writes the list; an entry holding a value km_info_read would refuse is
 * written without values (absent), so whatever it writes reads back. */
void km_info_write(km_writer *w, const km_info *info);
/* Reads a list written by km_info_write: at most KM_MODEL_MAX_FIGURES
 * entries of at most max_values values each (0: an absent figure), keys
 * of [A-Za-z0-9_], values finite (booleans 0 or 1, integers whole).
 * KM_ECORRUPT otherwise. */
km_status km_info_read(km_reader *r, km_info *info, size_t max_values,
                       km_error *err);

/* ------------------------------------------------------- models */

/*
 * An algorithm's descriptor: its whole life cycle, as Redis's module
 * types give theirs. Each algorithm's file defines one (the symbol named
 * in KM_ALGO_MAP); km_algo.c, km_model.c and km_predict.c dispatch
 * through them. The rule: what differs between algorithms is an entry of
 * this descriptor (add one when a new difference appears), never a test
 * or switch on the algorithm elsewhere in core, api/ or server/.
 *   outputs         KM_OUT_* flags: what its models can answer
 *   model_outputs   what one model can answer, when that depends on how
 *                   it was fitted (svc: probabilities only with
 *                   probability; kpca: inverse only with the inverse map);
 *                   NULL: outputs
 *   params_outputs  the same from the parameters alone, before a fit (a
 *                   search's or a scoring's check); NULL: outputs
 *   params          its parameter struct (km_krr_params, ...): the
 *                   rows describing each key a request may give (their
 *                   types, bounds, choices, the solver values they apply
 *                   with, docs), its size, and how to fill one with the
 *                   defaults (km_param_set, km_base.h; written next to
 *                   the descriptor; km_algorithm_params publishes it)
 *   check           the parameters against a problem (sizes, classes),
 *                   before any work: KM_EINVAL / KM_EPROBLEM naming the
 *                   field
 *   fit_bytes       peak bytes of a fit (admission control)
 *   fit             fits a problem; the typed km_*_fit does the work
 *   cv_params       adjusts a fold fit's copy of params for a scoring
 *                   that reads needs (its KM_OUT_* answers,
 *                   km_scoring_needs: the search computes them, so the
 *                   algorithm knows no scoring): a search's fold fits
 *                   drop what only the model kept needs (svc:
 *                   probability, unless needs holds probabilities);
 *                   NULL: none
 *   values ...      predict, one function per KM_OUT_* answer it gives
 *                   (NULL where it gives none); each checks the model's
 *                   algorithm and X (covariance: one n x n answer for
 *                   the whole batch)
 *   classes         1 if its models hold class labels (at most one per
 *                   training row and KM_MODEL_MAX_CLASSES)
 *   n_classes       a classifier's class count from its payload (what a
 *                   fit knows before the labels are set)
 *   decision_columns  the layout of its decision values (scores), by
 *                   which km_model_score_columns counts them per row
 *                   (km_decision_columns: svc pairs, klr classes; 0:
 *                   outputs)
 *   scores_first    1 when a binary model's one decision value is positive
 *                   for the first class (svc: LIBSVM's convention), which
 *                   scikit-learn's decision_function negates
 *   max_outputs     the largest n_outputs a model file may give
 *   payload_range   the bytes its payload takes in a file of this format
 *                   version whose header gives these sizes, [*lo, *hi]
 *                   (saturating: km_add_sat)
 *   file_format     the format version a file of this payload must have
 *                   (e.g. krr's rff form: 3; each algorithm's forms at
 *                   FORMAT_VERSION in km_model.c); NULL or 0: the oldest
 *                   current one, 2
 *   free_payload, save, load, bytes: the payload (the algorithm's own
 *                   struct, owned by the model). save writes it; load
 *                   reads it back (r is positioned at it and must be
 *                   consumed exactly); bytes counts its heap memory (m
 *                   gives the sizes).
 *   load_bytes      before a load, what it will take (admission control):
 *                   *kept, the bytes (as bytes counts them) of the
 *                   payload it makes, and *peak, the most heap it holds
 *                   at once (at least *kept), from m's sizes and the
 *                   payload's leading fields, read from r (a copy,
 *                   positioned as load's r). Computed by the function
 *                   bytes uses, so the two cannot drift apart; on a
 *                   payload load refuses, still a bound of what load
 *                   allocates before refusing it.
 *   target          what y it learns from (km_algorithm_target)
 *   check_targets   1 if check reads the problem's targets (sizes of y,
 *                   classes), so that a caller reads y before it checks
 *                   params; 0: params can be checked before y is read
 *   solver_needs    the KM_KERNEL_CAP_* flags a kernel must have for
 *                   each solver, indexed by the value of its params' solver
 *                   row (the row marked solver: its key, count and names;
 *                   km_caps.c); NULL: every solver takes every kernel
 *   check_kernel    KM_EINVAL when the solver params names does not take
 *                   k (by solver_needs); NULL: every solver takes every
 *                   kernel
 *   search          what a search does for it beyond the generic engine
 *                   (km_algo_search); NULL: nothing
 *   mpi             how it runs distributed (km_algo_mpi); NULL: it does
 *                   not (its params may hold pointers)
 *   self_of_new, vectors_only: the inputs it takes (its fields' comments)
 *   coefs           lists the model's coefficient arrays (km_coef, views
 *                   of its payload in scikit-learn's names and layout)
 *                   into out (at most KM_COEF_MAX); returns their count;
 *                   km_coef_f64 and km_coef_i32 make the views
 *   update          how its models take new rows without a full refit
 *                   (km_algo_update, km_update.c); NULL: they cannot
 */
typedef km_status (*km_predict_fn)(const km_model *m, const double *X,
                                   size_t n, double *out, km_error *err);

/*
 * What a search (km_search.c) does for an algorithm beyond fitting and
 * scoring each point's folds:
 *   caps          KM_SEARCH_* flags (km_algorithm_search_caps)
 *   serves        1 if a point of these params is served by the engine
 *                 of caps (CLOSED_FORM: krr's exact solver; SHARED_GRAM:
 *                 svm's exact solver, which takes kernel values given)
 *   cache_bytes   the kernel cache a point allows (svm's cache_mb), which
 *                 bounds a shared Gram (SHARED_GRAM)
 *   fold_classes  rewrites a fold fit's copy of params whose per-class
 *                 arrays index all classes to index the fold's k classes
 *                 (cls[c]: the class of the fold's class c), into
 *                 scratch (k values) (svc: class_weight); NULL: none
 *   one_output    1 if y must have one output (svr)
 *   is_auto, resolve_auto  a point whose solver is auto (is_auto) is
 *                 resolved once on the whole problem under budget
 *                 (resolve_auto, krr) before the search; NULL: none
 */
typedef struct km_algo_search {
    unsigned caps;
    int (*serves)(const void *params);
    double (*cache_bytes)(const void *params);
    void (*fold_classes)(void *params, const int *cls, size_t k,
                         double *scratch);
    int one_output;
    int (*is_auto)(const void *params);
    void (*resolve_auto)(void *params, const km_problem *pb, size_t budget);
} km_algo_search;

/*
 * How an algorithm's models take new rows (km_model_update, km_update.c,
 * which checks the rows, applies the model's preprocessing statistics and
 * times the update around these):
 *   what          which of its models can, for messages ("exact gpr
 *                 models"); km_update_possible joins them (a text that
 *                 an earlier algorithm's entry gives, once: svc and svr
 *                 share theirs)
 *   refusal       NULL if m can be updated, else why not (static text)
 *   bytes         peak bytes an update of m by k rows holds beyond m
 *   update        the new model (km_update_model_create builds it around
 *                 the new payload, with m's kernel, figures and
 *                 statistics) equal to a refit on m's rows and the k new
 *                 rows X (d = m's features, already preprocessed) with
 *                 targets Y (k x m's outputs, y_mean removed); it sets the
 *                 training figures its fit computes and that change
 */
typedef struct km_algo_update {
    const char *what;
    const char *(*refusal)(const km_model *m);
    size_t (*bytes)(const km_model *m, size_t k);
    km_status (*update)(const km_model *m, const double *X, size_t k,
                        const double *Y, const km_fit_control *ctl,
                        km_model **out, km_error *err);
} km_algo_update;

/*
 * How an algorithm runs distributed (server/srv_mpi.c routes, the worker
 * mpi/kmserve_mpi.c fits; the functions behind km_algorithm_mpi_*):
 *   refusal       NULL if a fit of params can run distributed, else why
 *                 not (in buf of len, or static)
 *   resolve       the worker's side: params as the worker runs them (an
 *                 auto solver resolved), KM_EINVAL if it cannot
 *   routes_auto   1 if a local fit of params may be moved to the cluster
 *                 when it does not fit here, with *exact (params->size
 *                 bytes) what the local fit would run instead (krr's
 *                 auto: exact); NULL: never
 *   rank_bytes    the largest rank's bytes on a rows x cols grid of
 *                 nb x nb blocks
 *   local_bytes   what the daemon holds for the fit
 */
typedef struct km_algo_mpi {
    const char *(*refusal)(const void *params, char *buf, size_t len);
    km_status (*resolve)(void *params, km_error *err);
    int (*routes_auto)(const void *params, void *exact);
    size_t (*rank_bytes)(const void *params, const km_problem *pb,
                         size_t nb, size_t rows, size_t cols);
    size_t (*local_bytes)(const void *params, const km_problem *pb);
} km_algo_mpi;

/* The names of the algorithms for which has(a) is nonzero, in list
 * order, into buf: "a, b and c" with last between the last two
 * (km_caps.c), for messages that list the algorithms that can do a
 * thing. */
void km_algorithm_names_where(int (*has)(km_algorithm a), const char *last,
                              char *buf, size_t len);

/* The distributed rank bytes of a dense n x n fit (krr's, gpr's): the
 * largest rank's share of the matrix, the broadcast X and Y, the gathers
 * and km_fit's copies on rank 0, plus extra (gpr: the factor L); and the
 * most rows of n one of p ranks holds in nb blocks (km_request.c). */
size_t km_mpi_dense_rank_bytes(const km_problem *pb, size_t nb, size_t rows,
                               size_t cols, size_t extra);
size_t km_mpi_local_max(size_t n, size_t nb, size_t p);

typedef struct km_algo {
    unsigned outputs;
    unsigned (*model_outputs)(const km_model *m);
    unsigned (*params_outputs)(const void *params);
    const km_param_set *params;
    km_status (*check)(const void *params, const km_problem *pb,
                       km_error *err);
    size_t (*fit_bytes)(const void *params, const km_problem *pb);
    km_status (*fit)(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err);
    void (*cv_params)(void *params, unsigned needs);
    km_predict_fn values, scores, probabilities, projections, inverse;
    km_predict_fn variances, covariance;
    km_status (*labels)(const km_model *m, const double *X, size_t n,
                        int *out, km_error *err);
    int classes; /* models hold classes: labels, one per class */
    size_t (*n_classes)(const km_model *m);
    km_decision_columns decision_columns;
    int scores_first;
    uint64_t (*max_outputs)(uint64_t n_samples);
    void (*payload_range)(uint32_t format, uint64_t n_samples,
                          uint64_t n_features, uint64_t n_outputs,
                          uint64_t *lo, uint64_t *hi);
    uint32_t (*file_format)(const void *payload);
    /* The row blocks of the payload's Cholesky factor (0, also NULL:
     * none) and *bytes, the bytes of its triangle: a model file of format
     * KM_FORMAT_BLOCKS lists the blocks of a factor of more than one
     * (their rows in the file) or of one stored in block files
     * (km_factor_write). */
    size_t (*factor_blocks)(const void *payload, uint64_t *bytes);
    void (*free_payload)(void *payload);
    void (*save)(const void *payload, const km_model *m, km_writer *w);
    km_status (*load)(km_reader *r, const km_model *m, void **payload,
                      km_error *err);
    size_t (*bytes)(const void *payload, const km_model *m);
    void (*load_bytes)(km_reader r, const km_model *m, size_t *kept,
                       size_t *peak);
    km_target target;
    int check_targets;
    /* the matrix whose eigenvalues the training figures "psd" and
     * "min_eigenvalue" are of (km_fit_note_psd): 0 the Gram k(X, X), 1
     * the centred H K H (kpca's eigenproblem) */
    int psd_centred;
    const unsigned *solver_needs;
    km_status (*check_kernel)(const void *params, const km_kernel *k,
                              km_error *err);
    const km_algo_search *search;
    const km_algo_mpi *mpi;
    size_t (*coefs)(const km_model *m, km_coef *out);
    /* 1 if its answers need k(x, x) of new rows (gpr's variances,
     * kkmeans' distances): a precomputed kernel, which has no value
     * between two new rows, cannot serve it */
    int self_of_new;
    /* 1 if it takes rows of numbers only, for what it learns of X beyond
     * the kernel (kpca's inverse map, by check_kernel), or NULL */
    int (*vectors_only)(const void *params);
    const km_algo_update *update;
} km_algo;

/* The model an update makes (km_update.c): of m's algorithm, kernel,
 * features and outputs, n_samples rows, around payload (owned from here,
 * also on failure), with copies of m's params and training figures, class
 * labels, preprocessing statistics and search record. */
km_status km_update_model_create(const km_model *m, size_t n_samples,
                                 void *payload, km_model **out,
                                 km_error *err);
/* Sets the figure key of info (replacing an entry of that key, or adding
 * one). KM_ENOMEM on failure. */
km_status km_info_set(km_info *info, const char *key, km_info_kind kind,
                      int is_array, const double *values, size_t count);
/* Removes the figure key from info, if there. */
void km_info_remove(km_info *info, const char *key);
/* KM_EINVAL unless a problem's sizes fit every algorithm's buffers and a
 * model file (km_fit.c's check, which a fit runs). */
km_status km_fit_check_sizes(const km_problem *pb, km_error *err);

/* Views for coefs (km_coef.c): v row-major, rows x cols (cols 0: a
 * vector of rows), paged over its rows when paged; transposed, the same
 * view seen as cols x rows (scikit-learn's (k-1, n_SV) of kmserve's
 * n_SV x (k-1)), paged over its columns. */
km_coef km_coef_f64(const char *name, const double *v, size_t rows,
                    size_t cols, int paged);
/* Which rows a model keeps (km_coef_input_rows): all its training rows,
 * its support vectors (svc, svr), or some chosen as centres. */
enum { KM_COEF_ROWS_ALL, KM_COEF_ROWS_SUPPORT, KM_COEF_ROWS_CENTRES };
/* The view of n rows X (n x d doubles, as the model keeps them) as m's
 * kernel takes its input (km_model.h's km_coef): rows of numbers,
 * strings, or kernel values without their index column; paged. A
 * precomputed model answers support vectors as scikit-learn does, shape
 * 0 x 0 (support_ says which rows), and centres with their training
 * rows' indices (km_model_coefs adds "centre_indices_"). */
km_coef km_coef_input_rows(const km_model *m, const char *name,
                           const double *X, size_t n, size_t d, int which);
km_coef km_coef_i32(const char *name, const int *v, size_t rows, int paged);
km_coef km_coef_transposed(km_coef c);

#define KM_ALGO_EXTERN(e, id, name, desc) extern const km_algo desc;
KM_ALGO_MAP(KM_ALGO_EXTERN)
#undef KM_ALGO_EXTERN

/* The descriptor of a; NULL if invalid. */
const km_algo *km_algo_of(km_algorithm a);

/*
 * Creates a model that takes ownership of payload (freed with the model,
 * also on failure) and copies kernel. n_outputs as km_model_n_outputs.
 */
km_status km_model_create(km_algorithm algo, const km_kernel *kernel,
                          size_t n_features, size_t n_samples,
                          size_t n_outputs, void *payload, km_model **out,
                          km_error *err);
void *km_model_payload(const km_model *m);
/* The format version of the file a model was loaded from (FORMAT_OLDEST
 * to FORMAT_VERSION of km_model.c; for a version 8 file, the version of
 * its payload's layout, which the file records); 0 for a model fitted
 * here. A payload's load reads it for its layout. */
uint32_t km_model_file_format(const km_model *m);
/* The format whose payloads name their factor's block files instead of
 * holding it (km_model_save_sink_blocks). */
#define KM_FORMAT_BLOCKS 12u
/* The drift reference of nm, m updated by the k raw rows X
 * (km_model_update): when m's reference holds all of its training rows
 * (fewer than the cap), the one a refit on all the rows would keep (them
 * and X, all of them, or km_model_set_reference's seeded subsample of
 * them past the cap); else m's, unchanged (a model past the cap keeps
 * its subsample); none when m has none. KM_ENOMEM. */
km_status km_model_update_reference(km_model *nm, const km_model *m,
                                    const double *X, size_t k,
                                    km_error *err);
/* Mutable lists, for the fit that builds the model. */
km_info *km_model_params_mut(km_model *m);
km_info *km_model_training_mut(km_model *m);
/* KM_ECONFLICT unless m is of algorithm a; names what was asked. */
km_status km_model_expect(const km_model *m, km_algorithm a, const char *op,
                          km_error *err);
/* The same, then km_model_check_input of X (n rows of the model's
 * features): the preamble of every predict. */
km_status km_model_expect_input(const km_model *m, km_algorithm a,
                                const char *op, const double *X, size_t n,
                                km_error *err);

/*
 * What a model keeps of its preprocessing (km_pre_stats.c): what was asked
 * and
 * the statistics learnt from the training rows, owned (NULL where they do
 * not apply). x' = (x - x_shift) / x_scale; value = model value + y_mean.
 */
typedef struct km_pre_stats {
    km_preprocess spec;
    double *x_shift, *x_scale; /* n_features each, when spec.x != NONE */
    double *y_mean;            /* n_outputs, when spec.center_y */
} km_pre_stats;

/* The model's own (km_model.c); a fit sets it before sharing. */
const km_pre_stats *km_model_pre(const km_model *m);
km_pre_stats *km_model_pre_mut(km_model *m);

/* The rest of this section is km_pre_stats.c's (what the model holds
 * and stores), save km_pre_predict and km_pre_predict_labels
 * (km_predict.c). Learning the statistics and a fit with them, km_pre_learn
 * and km_pre_fit, are select's (km_pre.c, km_select_internal.h). */
void km_pre_stats_cleanup(km_pre_stats *s);
/* Heap bytes of s for a model of nf features and no outputs. */
size_t km_pre_stats_bytes(const km_pre_stats *s, size_t nf, size_t no);
/* The file's preprocessing section (format version 2): u32 scale, u32
 * center_y, then f64s shift and scale (nf each) when scale is not none,
 * f64s y_mean (no) with center_y. */
void km_pre_write(km_writer *w, const km_pre_stats *s, size_t nf, size_t no);
/* bad (KM_EINVAL from a fit, KM_ECORRUPT from a model file) naming the
 * field after prefix when pre does not apply to a: an unknown scale, or
 * center_y for an algorithm that does not answer values. */
km_status km_pre_check_spec(const km_preprocess *pre, km_algorithm a,
                             km_status bad, const char *prefix,
                             km_error *err);
/* Reads and checks it (known scale, center_y 0 or 1 and only for an
 * algorithm that answers values, every number finite, every scale > 0):
 * KM_ECORRUPT naming what is wrong. s is filled also on failure (the
 * caller cleans it up). */
km_status km_pre_read(km_reader *r, km_pre_stats *s, km_algorithm a,
                      size_t nf, size_t no, km_error *err);
/* Bytes the section takes in a file with these sizes: [*lo, *hi]. */
void km_pre_file_range(uint64_t nf, uint64_t no, uint64_t *lo, uint64_t *hi);

/* Rows [0, n) of X (d features) into out through s's x statistics (out
 * may be X: in place). KM_EINVAL naming the entry X[row0 + i][j] when one
 * leaves the doubles (x far outside the training range). */
km_status km_pre_transform(const km_pre_stats *s, const double *X, size_t n,
                           size_t d, size_t row0, double *out, km_error *err);

/* km_predict and km_predict_labels through a model's preprocessing: fn
 * (or labels) is the descriptor's function for answer. */
km_status km_pre_predict(const km_model *m, unsigned answer, km_predict_fn fn,
                         const double *X, size_t n, double *out,
                         km_error *err);
km_status km_pre_predict_labels(const km_model *m,
                                km_status (*labels)(const km_model *,
                                                    const double *, size_t,
                                                    int *, km_error *),
                                const double *X, size_t n, int *out,
                                km_error *err);

/* ------------------------------------------------------- fits */

/* What every fit shares (km_fit.c). */
typedef struct km_fit_frame {
    km_algorithm algo;
    double t0;   /* km_now() at the start */
    km_kernel k; /* the caller's kernel, copied, default gamma resolved */
} km_fit_frame;

/* The checks of km_fit_begin, in its order, without the kernel's copy and
 * the scale check: what km_fit runs before it computes a preprocessing's
 * statistics from pb (so never from data that are not finite). */
km_status km_fit_validate(km_algorithm a, const km_kernel *kernel,
                          const void *params, const km_problem *pb,
                          km_error *err);

/*
 * The prologue of every fit: checks the kernel, the problem (sizes within
 * the same limits for every algorithm and what a model file holds; X, y
 * finite; labels in range) and, through a's descriptor, params; then
 * copies and resolves the kernel into f->k and checks X's scale against
 * it (km_kernel_check_scale). Call km_fit_cleanup(f) afterwards, also on
 * failure. Borrows kernel, params and pb.
 */
km_status km_fit_begin(km_fit_frame *f, km_algorithm a, const km_kernel *kernel,
                       const void *params, const km_problem *pb,
                       km_error *err);
/*
 * The epilogue: the model of f's algorithm and kernel, taking ownership of
 * payload (freed also on failure), with the training figure "seconds"
 * since km_fit_begin first. The caller adds its own figures after it.
 */
km_status km_fit_model(km_fit_frame *f, size_t n_features, size_t n_samples,
                       size_t n_outputs, void *payload, km_model **out,
                       km_error *err);
void km_fit_cleanup(km_fit_frame *f);
/*
 * The training figures of a kernel found not PSD on the training rows,
 * from the eigenvalues of its Gram on rows of the n training rows (rows
 * == n: all of them; fewer: a subsample, whose smallest eigenvalue bounds
 * the whole Gram's from above, by Cauchy's interlacing): when min_eig is
 * below -km_psd_threshold(rows, max(|min_eig|, |max_eig|)), "psd": false
 * and "min_eigenvalue" (all rows) or "min_eigenvalue_at_most" and
 * "psd_rows" (a subsample); nothing otherwise. KM_ENOMEM: the model is
 * the caller's to free.
 */
km_status km_fit_note_psd(km_model *m, double min_eig, double max_eig,
                          size_t rows, size_t n, km_error *err) KM_MUST_CHECK;

#endif /* KM_MODEL_INTERNAL_H */

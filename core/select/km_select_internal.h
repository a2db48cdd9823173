/*
 * km_select_internal.h - what select/'s files share with each other and
 * with core's tests, beyond the public header: a preprocessing's fit
 * (km_pre.c), the generic fit with or without its figures (km_train.c),
 * scores (km_score.c) and a search's folds (km_search.c). The search's
 * own files share more through km_search_internal.h, which includes
 * this one.
 *
 * Not installed; never included outside core/ (and its tests). Includes
 * the internal header of algorithms/ (and through it those of every room
 * below). Thread-safety as km.h.
 */
#ifndef KM_SELECT_INTERNAL_H
#define KM_SELECT_INTERNAL_H

#include "../algorithms/km_algorithms_internal.h"
#include "km_select.h"

/* ------------------------------------------------------- preprocessing */

/* The statistics of pre learnt from pb's rows into s (allocated here;
 * filled also on failure: the caller cleans it up): x's shift and scale
 * when pre->x is not none (from pb->X), y's mean with center_y (from
 * pb->y, which must then be given). KM_EPROBLEM for a feature too large to
 * standardize, KM_ENOMEM. km_pre_fit's, and the krr search's per fold. */
km_status km_pre_learn(const km_preprocess *pre, const km_problem *pb,
                       km_pre_stats *s, km_error *err);

/* km_fit with a preprocessing that does something (km_pre.c). */
km_status km_pre_fit(km_algorithm a, const km_kernel *k, const void *params,
                     const km_preprocess *pre, const km_problem *pb,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err);

/* ------------------------------------------------------- fits */

/*
 * km_fit, with the figures that only a model kept needs when figures is
 * nonzero: the training score (km_training_score, one predict over the
 * training rows, or over KM_SCORE_FIT_ROWS of them). km_fit passes 1; a search's fold fits, whose models
 * only answer their test rows and are freed, pass 0.
 */
km_status km_fit_inner(km_algorithm a, const km_kernel *k,
                       const void *params, const km_preprocess *pre,
                       const km_problem *pb, const km_fit_control *ctl,
                       int figures, km_model **out, km_error *err);

/*
 * The training figure "training_score": the algorithm's default scoring
 * (km_scoring_default) of m on its own training problem pb, through the
 * fitted model (km_model_score: one predict over the training rows, or
 * over a seeded subsample of KM_SCORE_FIT_ROWS of them, km_psd_subsample
 * with seed 0, when there are more: then "training_score_rows" says how
 * many), appended to m's training figures. None for a kpca model without
 * the inverse map, nor when the score is not a number (r2 of one row).
 * km_fit calls it after the descriptor's fit (km_fit_inner with figures).
 *
 * The bound: the figure is a diagnostic, and a predict over every row
 * can cost more than the fit itself (svc on 60,000 rows with 21,000
 * support vectors: 33 s of predicts after an 18 s fit); 5000 rows put an
 * accuracy within about 1.4 points (95%) of the whole set's.
 */
#define KM_SCORE_FIT_ROWS 5000
km_status km_training_score(km_model *m, const km_problem *pb, km_error *err);

/* *sub: pb itself when rows is all of it, else its rows at
 * km_psd_subsample's seeded indices (seed 0), X, y and labels, in new
 * arrays (km_score.c; the training score's and the PSD figures'); KM_ENOMEM.
 * km_subproblem_free frees them (once sub->X is not pb->X) and sets *sub
 * back to pb. */
km_status km_subproblem(const km_problem *pb, size_t rows, km_problem *sub,
                        km_error *err);
void km_subproblem_free(const km_problem *pb, km_problem *sub);

/* ------------------------------------------------------- scores */

/* The KM_OUT_* answers scoring s needs of a model (km_score.c): values,
 * labels (and probabilities), projections and the inverse map; 0 for an
 * unknown s. */
unsigned km_scoring_needs(km_scoring s);

/*
 * Answers to n rows and what they are scored against (borrowed), for
 * km_score_answers:
 *   values          Y (truth) and P (predictions), n x m
 *   labels          truth and pred (n class indices in [0, k)), proba
 *                   (n x k; read by neg_log_loss only)
 *   reconstruction  Y (the rows X) and P (their reconstructions), n x m
 *                   (m features)
 */
typedef struct km_answers {
    size_t n, m, k;
    const double *Y, *P;
    const int *truth, *pred;
    const double *proba;
} km_answers;

/* The score s of a (higher is better): km_score_regression's or
 * km_score_classes' figure (errors negated), or minus the mean over rows
 * and features of (Y - P)^2 (compensated sums). Their statuses, and
 * KM_EPROBLEM when the reconstruction error is not a finite number. The
 * one place a scoring is computed: km_model_score and km_search. */
km_status km_score_answers(km_scoring s, const km_answers *a, double *out,
                           km_error *err);

/* ------------------------------------------------------- search */

/* km_search's checks of s against pb, and its folds: fold[i] (n entries,
 * caller-allocated) gets row i's test fold, -1 for a row always trained
 * on; *n_splits the number of splits. For tests (km_search.c). */
km_status km_search_folds(const km_search_spec *s, const km_problem *pb,
                          int *fold, size_t *n_splits, km_error *err);

#endif /* KM_SELECT_INTERNAL_H */

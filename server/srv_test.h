/*
 * srv_test.h - pause points, for tests that must hit a race window.
 *
 * A few places where two requests (or two replicas) can interleave call
 * srv_test_pause("name"). Unless the environment variable
 * KMSERVE_TEST_PAUSE_DIR names a directory, that is all it does. When it
 * does, and the file DIR/name exists (the test "arms" the point), the
 * first thread to reach the point renames it to DIR/name.paused, logs
 * test_pause, and waits until that file is removed (the test "releases"
 * it) before it goes on; at most 10 minutes, so that a test that died
 * does not hold the daemon forever. One arming pauses one thread once.
 * A test so waits for an event (the .paused file), never for a time.
 *
 * The points, in the order a request meets them:
 *   versions_listed  GET .../versions, after it read which versions
 *                    the directory keeps, before it reads each one
 *   kept_sized       a request naming a kept version (pinned predict,
 *                    GET, v2 infer, rollback), after it found the file,
 *                    before it reads it
 *   kept_opened      the same, after it opened the file, before it reads
 *                    it and its factor's block files
 *   rollback_loaded  a rollback, after it read the kept version, before
 *                    it commits it
 *   update_computed  an update, after its model is computed, before it
 *                    is committed (srv_commit_update)
 *   name_lock        a commit or delete, before it takes the name's lock
 *                    that replicas share (srv_store_lock)
 *   scan_listing     a scan of the models directory (SIGHUP, the
 *                    watcher), after it read the first entry
 *   scan_load        a scan, before it takes the commit lock to load a
 *                    file it does not know (or unload a name whose file
 *                    is gone by then)
 *   keep_link        a save with --keep-versions > 1, after it learnt
 *                    which version the file it replaces holds, before it
 *                    keeps that file
 *   commit_stored    a commit (fit, upload, rollback), after its file
 *                    is renamed into place and the name's lock released,
 *                    before the registry serves its model (commit lock
 *                    held)
 *
 * Thread-safety: safe from any thread.
 */
#ifndef SRV_TEST_H
#define SRV_TEST_H

void srv_test_pause(const char *point);

#endif

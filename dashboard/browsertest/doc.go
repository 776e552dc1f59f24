// Package browsertest drives the duroxide dashboard in headless Chromium
// through the flows an operator follows: find a failed instance by filter,
// open it, read the failure in its timeline, act on an instance and watch
// it complete, pause a schedule from the schedules page and see its state
// change. It is its own module so that chromedp stays out of the
// library's go.mod; .ci/run installs Debian's chromium and runs it.
//
// Screenshots go to $BROWSERTEST_ARTIFACTS (default: a directory under
// the system's temporary directory, logged by the test).
package browsertest

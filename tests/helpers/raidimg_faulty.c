/* raidimg_faulty.c - raidimg with the test facility RAIDIMG_FAULTS: the
 * fault injector (source_fault.c) installed as the open hook of member
 * sources.  Built for the tests only (tests/helpers/raidimg-faulty); the
 * raidimg users run never looks at RAIDIMG_FAULTS. */
#include "cli.h"
#include "source_fault.h"

int main(int argc, char **argv)
{
	source_set_open_hook(source_fault_wrap);
	return raidimg_main(argc, argv);
}

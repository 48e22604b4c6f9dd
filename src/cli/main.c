/* main.c - the raidimg program (raidimg.c does the work). */
#include "cli.h"

int main(int argc, char **argv)
{
	return raidimg_main(argc, argv);
}

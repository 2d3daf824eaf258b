#include "cmds.h"
int dp_cmd_prep(int argc, char **argv)
{
	dp_tool_fail("prep", "not implemented yet");
	return 1;
}

#include "cmds.h"
int dp_cmd_gen(int argc, char **argv)
{
	dp_tool_fail("gen", "not implemented yet");
	return 1;
}

#include <stdio.h>
int main(void)
{
	fprintf(stderr, "not implemented yet\n");
	return 1;
}

"""Developer tools of hdfs-chaos that are not part of the installed package (setup
scripts, and the mutation testing of the mini-HDFS in tools/mutants)."""

# mkfs.matrixfs and fsck.matrixfs (issue 5).

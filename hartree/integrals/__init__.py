"""hartree.integrals"""
